"""Response bodies in OpenAI's and llama-server's shapes, built from generation events."""

from __future__ import annotations

import time
import uuid
from typing import Any

from worker.batching import Finished

__all__ = ["ChatShape", "NativeShape", "ResponseShape", "TextShape"]


def _usage(finished: Finished) -> dict[str, Any]:
    return {
        "prompt_tokens": finished.prompt_tokens,
        "completion_tokens": finished.predicted_tokens,
        "total_tokens": finished.prompt_tokens + finished.predicted_tokens,
        "prompt_tokens_details": {"cached_tokens": finished.cached_tokens},
    }


class ResponseShape:
    """How one route words its answer; subclasses fill in the three shapes."""

    def __init__(self, model: str, prefix: str) -> None:
        self.model = model
        self.id = f"{prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def opening(self) -> dict[str, Any] | None:
        return None

    def chunk(self, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def closing(self, finished: Finished) -> dict[str, Any]:
        raise NotImplementedError

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        raise NotImplementedError

    done_marker = True  # OpenAI streams end with `data: [DONE]`; llama-server's own do not


class ChatShape(ResponseShape):
    def __init__(self, model: str) -> None:
        super().__init__(model, "chatcmpl")

    def _chunk(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def opening(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant", "content": None}, None)

    def chunk(self, text: str) -> dict[str, Any]:
        return self._chunk({"content": text}, None)

    def closing(self, finished: Finished) -> dict[str, Any]:
        return {
            **self._chunk({}, finished.reason),
            "usage": _usage(finished),
            "timings": finished.timings,
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": finished.reason,
                }
            ],
            "usage": _usage(finished),
            "timings": finished.timings,
        }


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

    def chunk(self, text: str) -> dict[str, Any]:
        return self._body(text, None)

    def closing(self, finished: Finished) -> dict[str, Any]:
        return {
            **self._body("", finished.reason),
            "usage": _usage(finished),
            "timings": finished.timings,
        }

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            **self._body(text, finished.reason),
            "usage": _usage(finished),
            "timings": finished.timings,
        }


class NativeShape(ResponseShape):
    """llama-server's own ``/completion``."""

    done_marker = False

    def __init__(self, model: str) -> None:
        super().__init__(model, "cmpl")

    def chunk(self, text: str) -> dict[str, Any]:
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
