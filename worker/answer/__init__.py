"""Answers: one generation pipeline, the response shapes every API fills, resumable stream
sessions."""
