"""The ``corral`` command: subcommands, ``corral serve``'s flags and their help."""
