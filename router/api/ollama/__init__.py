"""Ollama's REST API on the router (docs/api.md#ollamas-api): ``protocol`` (request types),
``names``, ``translate`` and ``answers`` (to and from the worker's API), the serving modules
``generation``, ``listing`` and ``management``, and ``routes`` (thin handlers)."""
