"""Ollama's REST API on the router (docs/api.md#ollamas-api): ``protocol`` (request types),
``names`` and ``lookup`` (which model a name means), ``translate`` and ``answers`` (to and from
the worker's API), ``errors``, the serving modules ``generation``, ``listing`` and
``management``, and ``routes`` (thin handlers)."""
