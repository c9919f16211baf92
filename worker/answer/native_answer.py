"""llama-server's own final answer body, and its ``__verbose`` copy in OpenAI answers.

``/completion`` answers with it (:class:`~worker.api.completions.shapes.NativeShape`); with
``--verbose``, or a request's ``verbose: true``, llama-server adds the same object to a whole
OpenAI answer as ``__verbose``, so a client can see the prompt as the template rendered it and
the settings the request ran with (docs/api.md).
"""

from __future__ import annotations

from typing import Any

from worker.answer.answer_context import AnswerContext
from worker.answer.sampling_fields import SamplingFields
from worker.engine.generation import Finished
from worker.engine.model import LoadedModel
from worker.sampling.generation_settings import generation_settings
from worker.sampling.params import SamplingParams

__all__ = ["native_final", "request_settings", "request_stops"]


def request_stops(model: LoadedModel, body: SamplingFields) -> list[str]:
    """The request's stop strings; as llama-server, ``-r``'s when it gives none."""
    stop = body.stop or list(model.settings.reverse_prompt)
    return [stop] if isinstance(stop, str) else list(stop)


def request_settings(
    model: LoadedModel, body: SamplingFields, params: SamplingParams, budget: int | None
) -> dict[str, Any]:
    """The ``generation_settings`` a request runs with."""
    return generation_settings(
        params,
        n_predict=-1 if budget is None else budget,
        n_keep=model.settings.keep if body.n_keep is None else body.n_keep,
        stops=request_stops(model, body),
        stream=body.stream,
        n_probs=body.n_probs,
    )


def native_final(
    context: AnswerContext, text: str, finished: Finished, tokens: list[int], has_new_line: bool
) -> dict[str, Any]:
    """llama-server's final ``/completion`` body (server-task.cpp, ``to_json_non_oaicompat``).

    A route that renders no prompt text (``/infill``) shows an empty prompt and no settings.
    """
    rendered = context.rendered
    if finished.stop_word is not None:
        stop_type = "word"
    else:
        stop_type = "limit" if finished.reason == "length" else "eos"
    return {
        "index": context.index,
        "content": text,
        "tokens": tokens,
        "id_slot": finished.id_slot,
        "stop": True,
        "model": context.model,
        "tokens_predicted": finished.predicted_tokens,
        "tokens_evaluated": finished.prompt_tokens,
        "generation_settings": {} if rendered is None else rendered.settings,
        "prompt": "" if rendered is None else rendered.text,
        "has_new_line": has_new_line,
        "truncated": finished.truncated,
        "stop_type": stop_type,
        "stopping_word": finished.stop_word or "",
        "tokens_cached": finished.cached_tokens,
        "timings": finished.timings,
    }
