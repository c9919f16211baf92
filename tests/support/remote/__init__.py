"""Other machines a test stands up on loopback: a ggml RPC server, a Ray cluster in a namespace."""
