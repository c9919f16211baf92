"""Scheduling decisions: the FIFO queue, loads, eviction; its errors mapped to HTTP once."""
