"""Files the tests make: tiny GGUF models, adapters, projectors and media, malformed GGUFs, hub
cache folders; and the bundled model."""
