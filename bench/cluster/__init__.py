"""Corral on a Ray cluster: ``python -m bench.cluster [--quick] [--json] [-- SERVE_FLAGS]``.

One run, on a real Ray cluster on this machine (docs/scaling.md, "Cluster"): a head and one node
``far``, each ``ray start --num-cpus 1``, in a network namespace of its own with only ``lo``
(tests/support/remote/ray_cluster.py, the cluster tests' own; needs root), with the router and
every worker inside it. Two measurements (docs/benchmarks.md, "Cluster"):

- **decode across nodes**: the same GGUF under two names, ``near`` on the head (the router's
  own node) and ``far`` on the other node, same flags; streams alternate between them in ABBA
  turns of ``--rounds`` streams each, and the ratio is far's median decode rate over near's;
- **failover**: ``far``'s node dies (every process of its tree SIGKILLed by pid: raylet, node
  agent, the worker), and non-streamed requests for ``far`` are sent until one answers 200;
  the time is from the kill to that answer (the load on the head included).

The head's agent reports at most ``measure.HEAD_MEMORY_MAX`` of room, so ``far``, loaded after
the node joined, goes to the node with more. Every process of the cluster is killed by pid at
the end. This is a measurement, not a test: it exits 0 whether or not the targets are met. Its
own folder (``measure.py``: the cluster and the two measurements; ``__main__.py``: the flags
and the report) keeps bench/ within the modules a folder may hold.
"""
