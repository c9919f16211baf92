"""Text from sampled tokens: token pieces, UTF-8 assembly and stop strings.

Text is assembled from token pieces with an incremental UTF-8 decoder, and a
:class:`StopMatcher` holds back any tail that could still become a stop string, so a stop string
never reaches a client partially.
"""

from __future__ import annotations

import codecs
import ctypes

from worker.host.llama_bindings import llama_cpp

__all__ = ["IndentLimit", "StopMatcher", "TextAssembler", "token_piece"]


_PIECE_BUFFER = 256


def token_piece(vocab: llama_cpp.llama_vocab_p, token: int, special: bool = False) -> bytes:
    # llama-cpp-python's LlamaModel.token_to_piece returns its whole buffer, NULs included.
    buffer = ctypes.create_string_buffer(_PIECE_BUFFER)
    n = llama_cpp.llama_token_to_piece(vocab, token, buffer, _PIECE_BUFFER, 0, special)
    if n < 0:  # the piece is longer than the buffer: ask again with the size it needs
        buffer = ctypes.create_string_buffer(-n)
        n = llama_cpp.llama_token_to_piece(vocab, token, buffer, -n, 0, special)
    return buffer.raw[:n]


class TextAssembler:
    """Token pieces in, complete UTF-8 text out (a character split over tokens waits)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, piece: bytes) -> str:
        return self._decoder.decode(piece)

    def finish(self) -> str:
        return self._decoder.decode(b"", final=True)


class StopMatcher:
    """Finds stop strings in generated text without ever releasing part of one."""

    def __init__(self, stops: list[str]) -> None:
        self._stops = [stop for stop in stops if stop]
        self._held = ""
        self.matched: str | None = None

    def feed(self, text: str) -> str:
        """Text that is safe to send now; sets :attr:`matched` when a stop string appears."""
        if not self._stops:
            return text
        pending = self._held + text
        hits = [(pending.find(stop), stop) for stop in self._stops if stop in pending]
        if hits:
            index, self.matched = min(hits)
            self._held = ""
            return pending[:index]
        keep = max((self._overlap(pending, stop) for stop in self._stops), default=0)
        self._held = pending[len(pending) - keep :] if keep else ""
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """At the end of generation, whatever was held back was not a stop string after all."""
        held, self._held = self._held, ""
        return held

    @staticmethod
    def _overlap(text: str, stop: str) -> int:
        # Longest suffix of `text` that is a proper prefix of `stop`.
        for size in range(min(len(text), len(stop) - 1), 0, -1):
            if text.endswith(stop[:size]):
                return size
        return 0


class IndentLimit:
    """llama-server's ``n_indent`` (server-context.cpp, ``process_token``): once the text has a
    new line, a line that starts with less indentation ends the generation, and is cut.

    As upstream, a line is looked at from the token after the one that ended the line before,
    and only the non-blank part of it is cut.
    """

    def __init__(self, n_indent: int) -> None:
        self._n_indent = n_indent
        self._text = ""
        self._new_line = False
        self._line_start = 0

    def feed(self, text: str) -> int | None:
        """Take one token's text; where the text fed so far ends if the generation ends here."""
        if self._n_indent <= 0:
            return None
        self._text += text
        cut = None
        if self._new_line:
            if self._line_start > 0:
                pos = self._line_start
                while pos < len(self._text) and self._text[pos] in " \t":
                    pos += 1
                if pos < len(self._text) and pos - self._line_start < self._n_indent:
                    cut = pos
            if (found := self._text.find("\n", self._line_start)) != -1:
                self._line_start = found + 1
        self._new_line = self._new_line or "\n" in text
        return cut
