"""Resumable streams (docs/protocol.md §5): replay, lookup and stop a conversation's stream."""

__all__: list[str] = []
