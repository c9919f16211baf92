"""ggml's RPC backend from the worker's llama.cpp build: remote devices for a model's layers
(``--rpc``) and the server that offers this machine's devices (``corral rpc-server``).

docs/scaling.md, "One model across machines: ggml RPC".
"""
