"""Chats: the one chat pipeline every chat-style API translates into, and each family's output
syntax."""
