"""Children: the worker pool (the only writer of model state), one supervisor per child, spares,
the watchdog, downloads."""
