"""The one table of per-model options: kinds and parsers of their values, flags, help."""
