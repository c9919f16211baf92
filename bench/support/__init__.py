"""What the benchmarks share: the servers they start, timed streams, comparison tables, stand-in
models."""
