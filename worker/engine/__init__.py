"""The engine: one thread owns the llama.cpp context and runs continuous batching over the slots."""
