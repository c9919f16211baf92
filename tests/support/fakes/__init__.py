"""Stand-ins for what a test does not run for real: a clock, the hub, the launcher, a peer, GPUs,
routes that fail."""
