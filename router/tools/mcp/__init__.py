"""The tools of stdio MCP servers (docs/tools.md, MCP servers): their configuration, one server over
the ``mcp`` SDK, the calls under way, the guard that ends a server with the router."""
