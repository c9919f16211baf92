"""Benchmarks: scripts run by hand (``python -m bench.NAME``), not part of the test suite."""
