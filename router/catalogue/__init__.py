"""Where models come from: the hub cache, --models-dir, presets, -m; and their files."""
