"""The worker's process: llama.cpp's bindings and ggml's backends, threads, the import fence, the
HTTP server."""
