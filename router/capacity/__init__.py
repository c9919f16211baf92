"""What the machine has and what models take: the GPU inventory, where the router put a model,
the GPU footprints measured, the host memory budget."""
