"""The workers: the pool (the only writer of model state) and its model lookup and change signal,
each child's launch and supervisor, the HTTP client to a worker, spares, the stall watchdog."""
