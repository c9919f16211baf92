"""One loaded GGUF and the generation calls the HTTP layer needs.

Every method here runs on the engine thread (see :mod:`worker.engine`); ``cancel`` is checked once
per sampled token, so a client that leaves stops the work within one token.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import llama_cpp
import msgspec
import numpy as np
import numpy.typing as npt
import structlog
from llama_cpp import Llama, LogitsProcessorList, llama_chat_format

from worker.engine import Cancelled
from worker.protocol import (
    ChatRequest,
    CompletionRequest,
    NativeCompletionRequest,
    SamplingFields,
    TokenizeRequest,
)
from worker.settings import WorkerSettings

__all__ = ["LoadedModel"]

_log = structlog.get_logger("corral.worker.model")
_FALLBACK_TEMPLATE = "chatml"
# KV cache types by their llama-server names (``--cache-type-k q8_0``).
_GGML_TYPES = {
    "f32": llama_cpp.GGML_TYPE_F32,
    "f16": llama_cpp.GGML_TYPE_F16,
    "bf16": 30,  # GGML_TYPE_BF16 in ggml.h; the Python bindings do not export it
    "q8_0": llama_cpp.GGML_TYPE_Q8_0,
    "q4_0": llama_cpp.GGML_TYPE_Q4_0,
    "q4_1": llama_cpp.GGML_TYPE_Q4_1,
    "iq4_nl": llama_cpp.GGML_TYPE_IQ4_NL,
    "q5_0": llama_cpp.GGML_TYPE_Q5_0,
    "q5_1": llama_cpp.GGML_TYPE_Q5_1,
}


def _stop_on(cancel: threading.Event) -> LogitsProcessorList:
    # llama-cpp-python's chat API has no stopping hook, but it calls logits processors once per
    # token: raising there unwinds the generation cleanly.
    def check(_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        if cancel.is_set():
            raise Cancelled
        return scores

    return LogitsProcessorList([check])


def _builtin_templates() -> set[str]:
    registry = llama_chat_format.LlamaChatCompletionHandlerRegistry()  # type: ignore[no-untyped-call]
    return set(registry._chat_handlers)


class LoadedModel:
    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.llama = Llama(
            model_path=str(settings.model),
            n_ctx=settings.ctx_size,
            n_batch=settings.batch_size,
            n_ubatch=settings.ubatch_size,
            n_threads=settings.threads,
            n_gpu_layers=settings.n_gpu_layers,
            use_mmap=settings.use_mmap,
            use_mlock=settings.use_mlock,
            flash_attn=settings.flash_attn,
            rope_freq_base=settings.rope_freq_base,
            type_k=_GGML_TYPES.get(settings.cache_type_k or ""),
            type_v=_GGML_TYPES.get(settings.cache_type_v or ""),
            verbose=False,
        )
        self.chat_template = self._choose_chat_template()

    def _choose_chat_template(self) -> str:
        wanted = self.settings.chat_template
        if wanted is None:
            if "tokenizer.chat_template" in self.llama.metadata:
                return "gguf"
            # llama-cpp-python would silently fall back to llama-2, a wrong format for most models.
            _log.warning("model has no chat template, using chatml", model=self.settings.alias)
            self.llama.chat_format = _FALLBACK_TEMPLATE
            return _FALLBACK_TEMPLATE
        if wanted in _builtin_templates():
            self.llama.chat_handler = None
            self.llama.chat_format = wanted
            return wanted
        vocab_token = self.llama._model.token_get_text
        formatter = llama_chat_format.Jinja2ChatFormatter(
            template=wanted,
            eos_token=vocab_token(self.llama.token_eos()),
            bos_token=vocab_token(self.llama.token_bos()),
        )
        self.llama.chat_handler = formatter.to_chat_handler()
        return "custom"

    def info(self) -> dict[str, Any]:
        model = self.llama._model
        return {
            "id": self.settings.alias,
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {
                "n_vocab": self.llama.n_vocab(),
                "n_ctx": self.llama.n_ctx(),
                "n_ctx_train": model.n_ctx_train(),
                "n_embd": self.llama.n_embd(),
                "n_params": model.n_params(),
                "size": model.size(),
                "chat_template": self.chat_template,
            },
        }

    def _sampling(self, request: SamplingFields, cancel: threading.Event) -> dict[str, Any]:
        seed = request.seed if request.seed is not None else self.settings.seed
        return {
            "temperature": (
                self.settings.temperature if request.temperature is None else request.temperature
            ),
            "top_k": request.top_k,
            "top_p": request.top_p,
            "min_p": request.min_p,
            "typical_p": request.typical_p,
            "repeat_penalty": request.repeat_penalty,
            "presence_penalty": request.presence_penalty,
            "frequency_penalty": request.frequency_penalty,
            "stop": request.stop or [],
            "seed": seed if seed >= 0 else None,
            "model": self.settings.alias,
            "logits_processor": _stop_on(cancel),
        }

    def _budget(self, *requested: int | None) -> int | None:
        """First token budget the client gave, else ``--n-predict``; -1 means up to the context."""
        budget = next((value for value in requested if value is not None), self.settings.n_predict)
        return None if budget < 0 else budget

    def chat(self, request: ChatRequest, cancel: threading.Event) -> Any:
        return self.llama.create_chat_completion(
            messages=msgspec.to_builtins(request.messages),
            stream=request.stream,
            max_tokens=self._budget(
                request.max_completion_tokens, request.max_tokens, request.n_predict
            ),
            **self._sampling(request, cancel),
        )

    def completion(self, request: CompletionRequest, cancel: threading.Event) -> Any:
        return self.llama.create_completion(
            prompt=request.prompt,
            stream=request.stream,
            echo=request.echo,
            max_tokens=self._budget(request.max_tokens, request.n_predict) or -1,
            **self._sampling(request, cancel),
        )

    def native_completion(
        self, request: NativeCompletionRequest, cancel: threading.Event
    ) -> dict[str, Any] | Iterator[dict[str, Any]]:
        """llama-server's ``/completion`` shape, built from the OpenAI-shaped result."""
        options = {
            "prompt": request.prompt,
            "max_tokens": self._budget(request.n_predict, request.max_tokens) or -1,
            **self._sampling(request, cancel),
        }
        if not request.stream:
            result: Any = self.llama.create_completion(stream=False, **options)
            choice = result["choices"][0]
            usage = result["usage"]
            return self._native_final(
                choice["text"],
                choice["finish_reason"],
                usage["completion_tokens"],
                usage["prompt_tokens"],
            )
        return self._native_stream(options)

    def _native_stream(self, options: dict[str, Any]) -> Iterator[dict[str, Any]]:
        prompt = options["prompt"]
        n_prompt = len(prompt) if isinstance(prompt, list) else len(self.tokenize_text(prompt))
        predicted = 0
        finish: str | None = None
        chunks: Any = self.llama.create_completion(stream=True, **options)
        for chunk in chunks:
            choice = chunk["choices"][0]
            finish = choice["finish_reason"] or finish
            if choice["text"]:
                predicted += 1
                yield {"content": choice["text"], "stop": False, "id_slot": 0, "index": 0}
        yield self._native_final("", finish, predicted, n_prompt)

    def _native_final(
        self, content: str, finish: str | None, predicted: int, evaluated: int
    ) -> dict[str, Any]:
        return {
            "content": content,
            "stop": True,
            "id_slot": 0,
            "index": 0,
            "model": self.settings.alias,
            "stop_type": "limit" if finish == "length" else "eos",
            "tokens_predicted": predicted,
            "tokens_evaluated": evaluated,
        }

    def tokenize_text(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode(), add_bos=True, special=True)

    def tokenize(self, request: TokenizeRequest) -> dict[str, Any]:
        tokens = self.llama.tokenize(
            request.content.encode(), add_bos=request.add_special, special=request.parse_special
        )
        if not request.with_pieces:
            return {"tokens": tokens}
        pieces = []
        for token in tokens:
            raw = self.llama.detokenize([token], special=True)
            try:
                piece: str | list[int] = raw.decode()
            except UnicodeDecodeError:  # a partial UTF-8 sequence: upstream sends the bytes
                piece = list(raw)
            pieces.append({"id": token, "piece": piece})
        return {"tokens": pieces}

    def detokenize(self, tokens: list[int]) -> dict[str, Any]:
        n_vocab = self.llama.n_vocab()
        bad = [token for token in tokens if token >= n_vocab]
        if bad:
            raise ValueError(f"token id {bad[0]} is out of range (vocabulary has {n_vocab})")
        return {"content": self.llama.detokenize(tokens, special=True).decode("utf-8", "replace")}
