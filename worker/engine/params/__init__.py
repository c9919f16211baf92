"""The worker's flags as llama.cpp's model and context parameters: RoPE and YaRN scaling,
``--override-kv``, control vectors."""
