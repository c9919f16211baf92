"""Relaying requests: to a worker, to a peer; which worker owns each resumable conversation."""
