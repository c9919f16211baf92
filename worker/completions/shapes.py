"""Raw-prompt completions in OpenAI's ``text_completion`` shape and llama-server's own."""

from __future__ import annotations

from typing import Any

from worker.batching import Finished
from worker.response_shape import ResponseShape, openai_accounting

__all__ = ["NativeShape", "TextShape"]


class TextShape(ResponseShape):
    """OpenAI ``/v1/completions``."""

    def __init__(self, model: str) -> None:
        super().__init__(model, "cmpl")

    def _body(self, text: str, finish: str | None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}],
        }

    def chunk(self, text: str) -> dict[str, Any] | None:
        return self._body(text, None)

    def closing(self, finished: Finished) -> dict[str, Any]:
        return {
            **self._body("", finished.reason),
            **openai_accounting(finished),
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            **self._body(text, finished.reason),
            **openai_accounting(finished),
        }


class NativeShape(ResponseShape):
    """llama-server's own ``/completion``."""

    done_marker = False

    def __init__(self, model: str) -> None:
        super().__init__(model, "cmpl")

    def chunk(self, text: str) -> dict[str, Any] | None:
        return {"content": text, "stop": False, "id_slot": 0, "index": 0}

    def closing(self, finished: Finished) -> dict[str, Any]:
        return self.whole("", finished)

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        if finished.stop_word is not None:
            stop_type = "word"
        else:
            stop_type = "limit" if finished.reason == "length" else "eos"
        return {
            "content": text,
            "stop": True,
            "id_slot": 0,
            "index": 0,
            "model": self.model,
            "stop_type": stop_type,
            "stopping_word": finished.stop_word or "",
            "tokens_predicted": finished.predicted_tokens,
            "tokens_evaluated": finished.prompt_tokens,
            "tokens_cached": finished.cached_tokens,
            "timings": finished.timings,
        }
