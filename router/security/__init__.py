"""Who may call: API keys and their scopes, rate limits, request size limits."""
