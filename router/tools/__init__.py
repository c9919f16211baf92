"""Server-side tools the model may call (docs/tools.md): llama-server's built-in tools and the
tools of stdio MCP servers, run in the router for every model, behind ``GET``/``POST /tools``."""
