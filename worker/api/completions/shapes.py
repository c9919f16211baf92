"""Raw-prompt completions in OpenAI's ``text_completion`` shape and llama-server's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.answer.answer_context import AnswerContext
from worker.answer.native_answer import native_final
from worker.answer.response_shape import (
    ResponseShape,
    openai_accounting,
    with_progress,
    with_timings,
)
from worker.engine.generation import Delta, Finished, Progress
from worker.sampling.token_probs import TokenProb, TokenProbs, log_prob

__all__ = ["NativeOptions", "NativeShape", "TextShape", "probabilities_json"]


class TextShape(ResponseShape):
    """OpenAI ``/v1/completions``."""

    id_prefix = "cmpl-"

    def _body(self, text: str, finish: str | None) -> dict[str, Any]:
        choice = {
            "index": self.context.index,
            "text": text,
            "logprobs": None,
            "finish_reason": finish,
        }
        return {
            "id": self.id,
            "object": "text_completion",
            "created": self.context.created,
            "model": self.context.model,
            "system_fingerprint": self.fingerprint,
            "choices": [choice],
        }

    def chunk(self, text: str) -> dict[str, Any] | None:
        return with_timings(self._body(text, None), self.last)

    def progress(self, progress: Progress) -> dict[str, Any]:
        return with_progress(self._body("", None), progress)

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


def _entry(prob: TokenProb, post: bool) -> dict[str, Any]:
    value = {"prob": prob.prob} if post else {"logprob": log_prob(prob)}
    return {
        "id": prob.token,
        "token": prob.piece.decode("utf-8", "replace"),
        "bytes": list(prob.piece),
        **value,
    }


def probabilities_json(probs: TokenProbs) -> dict[str, Any]:
    """One token's entry of llama-server's ``completion_probabilities``."""
    post = probs.post_sampling
    top = [_entry(p, post) for p in probs.top]
    return {**_entry(probs.chosen, post), ("top_probs" if post else "top_logprobs"): top}


@dataclass(frozen=True, slots=True)
class NativeOptions:
    """What a ``/completion`` request asked to see besides the text and the prompt."""

    return_tokens: bool = False
    response_fields: tuple[str, ...] = ()


def _nested(paths: tuple[str, ...], body: dict[str, Any]) -> dict[str, Any]:
    """``response_fields``: only these values, keyed by their ``a/b`` paths (upstream's
    ``json_get_nested_values``); a path that is not there is left out."""
    picked: dict[str, Any] = {}
    for path in paths:
        value: Any = body
        for key in path.split("/"):
            if not isinstance(value, dict) or key not in value:
                break
            value = value[key]
        else:
            picked[path] = value
    return picked


class NativeShape(ResponseShape):
    """llama-server's own ``/completion``."""

    done_marker = False
    id_prefix = "cmpl-"

    def __init__(self, context: AnswerContext, options: NativeOptions | None = None) -> None:
        super().__init__(context)
        self.options = options or NativeOptions()
        self._tokens: list[int] = []
        self._probs: list[dict[str, Any]] = []
        self._new_line = False

    def observe(self, delta: Delta) -> None:
        super().observe(delta)
        self._new_line |= "\n" in delta.text
        if delta.token >= 0:
            self._tokens.append(delta.token)
        if delta.probs is not None:
            self._probs.append(probabilities_json(delta.probs))

    def chunk(self, text: str) -> dict[str, Any] | None:
        last = self.last
        body: dict[str, Any] = {
            "content": text,
            "tokens": [last.token] if last is not None and last.token >= 0 else [],
            "stop": False,
            "id_slot": 0,
            "index": self.context.index,
        }
        if last is not None and last.probs is not None:
            body["completion_probabilities"] = [probabilities_json(last.probs)]
        return with_timings(body, last)

    def progress(self, progress: Progress) -> dict[str, Any]:
        body = {
            "content": "",
            "tokens": [],
            "stop": False,
            "id_slot": 0,
            "index": self.context.index,
            "tokens_predicted": 0,
            "tokens_evaluated": progress.total,
        }
        return with_progress(body, progress)

    def answer(self, text: str, finished: Finished) -> dict[str, Any]:
        # This body is the one ``__verbose`` copies into OpenAI answers: it shows the rendered
        # prompt itself, and never carries a copy of itself.
        return self.whole(text, finished)

    def closing(self, finished: Finished) -> dict[str, Any]:
        return self._final("", finished, streamed=True)

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return self._final(text, finished, streamed=False)

    def _final(self, text: str, finished: Finished, *, streamed: bool) -> dict[str, Any]:
        options = self.options
        tokens = self._tokens if options.return_tokens and not streamed else []
        body = native_final(self.context, text, finished, tokens, self._new_line)
        if self._probs and not streamed:
            body["completion_probabilities"] = self._probs
        if options.response_fields:
            return _nested(options.response_fields, body)
        return body
