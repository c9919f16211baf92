"""A loaded llama.cpp model: the few calls the worker makes on it (engine thread only).

What llama-cpp-python's ``_internals.LlamaModel`` does for the worker, over the C API alone:
that class's module imports numpy, which a worker does not otherwise need (see
:mod:`worker.host.llama_bindings`).
"""

from __future__ import annotations

import ctypes
from typing import Any

from llama_cpp._utils import suppress_stdout_stderr

from worker.host.llama_bindings import llama_cpp

__all__ = ["LlamaModel"]


class LlamaModel:
    def __init__(self, path: str, params: Any) -> None:
        # llama.cpp narrates the load on stderr past its log callback.
        with suppress_stdout_stderr(disable=False):
            model = llama_cpp.llama_model_load_from_file(path.encode(), params)
        if model is None:
            raise ValueError(f"failed to load model from file: {path}")
        self.model: Any = model
        self.vocab: Any = llama_cpp.llama_model_get_vocab(model)

    def close(self) -> None:
        if self.model is not None:
            llama_cpp.llama_model_free(self.model)
            self.model = None

    def vocab_type(self) -> int:
        return int(llama_cpp.llama_vocab_type(self.vocab))

    def n_vocab(self) -> int:
        return int(llama_cpp.llama_vocab_n_tokens(self.vocab))

    def n_ctx_train(self) -> int:
        return int(llama_cpp.llama_model_n_ctx_train(self.model))

    def n_embd(self) -> int:
        return int(llama_cpp.llama_model_n_embd(self.model))

    def size(self) -> int:
        return int(llama_cpp.llama_model_size(self.model))

    def n_params(self) -> int:
        return int(llama_cpp.llama_model_n_params(self.model))

    def token_bos(self) -> int:
        return int(llama_cpp.llama_vocab_bos(self.vocab))

    def token_eos(self) -> int:
        return int(llama_cpp.llama_vocab_eos(self.vocab))

    def add_bos_token(self) -> bool:
        return bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))

    def tokenize(self, text: bytes, add_special: bool, parse_special: bool) -> list[int]:
        room = max(len(text) + 8, 16)  # a token is at least one byte; specials are extra
        tokens = (llama_cpp.llama_token * room)()
        count = llama_cpp.llama_tokenize(
            self.vocab, text, len(text), tokens, room, add_special, parse_special
        )
        if count < 0:  # -count is the room it needs
            room = -count
            tokens = (llama_cpp.llama_token * room)()
            count = llama_cpp.llama_tokenize(
                self.vocab, text, len(text), tokens, room, add_special, parse_special
            )
            if count < 0:
                raise RuntimeError(f"failed to tokenize {len(text)} bytes")
        return list(tokens[:count])

    def metadata(self) -> dict[str, str]:
        """Every GGUF key-value pair, values as text."""

        def read(call: Any, index: int) -> str:
            size = 1024
            while True:
                buffer = ctypes.create_string_buffer(size)
                needed = call(self.model, index, buffer, size)
                if needed < size:
                    return buffer.value.decode("utf-8", "replace")
                size = needed + 1

        return {
            read(llama_cpp.llama_model_meta_key_by_index, index): read(
                llama_cpp.llama_model_meta_val_str_by_index, index
            )
            for index in range(llama_cpp.llama_model_meta_count(self.model))
        }
