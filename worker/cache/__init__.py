"""KV caches: the slots' caches, the prompt cache in host memory, caches saved to disk, slot
files."""
