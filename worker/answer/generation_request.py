"""From a validated request to a generation: sampling, budget, context check.

The request's fields become :class:`~worker.sampling.chain.SamplingParams` and a
:data:`MakeGeneration` that queues it on the engine; the answer pipeline
(:mod:`worker.answer.pipeline`) runs it. docs/architecture.md (Code map, ``answer/``).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio.to_thread
import msgspec
from litestar import Response

from corral.http.errors import ApiError
from worker.answer.answer_context import RenderedPrompt
from worker.answer.native_answer import request_settings, request_stops
from worker.answer.sampling_fields import SamplingFields
from worker.answer.sampling_request import indent, request_sampling, time_limit_ms
from worker.engine.engine import Engine
from worker.engine.generation import Generation, GenerationEvent
from worker.engine.model import LoadedModel
from worker.host.cache_scope import request_cache_scope
from worker.host.restore_notes import restore_notify
from worker.media.projector import MediaPrompt
from worker.sampling.grammars import GrammarError, grammar_for
from worker.sampling.logit_bias import parse_logit_bias
from worker.sampling.params import SamplingParams
from worker.sampling.reasoning_budget import ReasoningBudget
from worker.state import AnyRequest

__all__ = [
    "ContextError",
    "MakeGeneration",
    "body_grammar",
    "context_error_response",
    "prepare_generation",
    "sampling_params",
    "token_budget",
    "verbose_prompt",
]

MakeGeneration = Callable[[Callable[[GenerationEvent], None]], Generation]


async def body_grammar(body: SamplingFields) -> str | None:
    """The request's own grammar (``grammar``, ``json_schema`` or ``response_format``) as GBNF;
    400 for one that cannot be used. A schema is converted in a thread, within the converter's
    size caps (worker/sampling/schema_limits.py), so that a large one never stalls the other
    streams of this worker (docs/security.md, "Media and JSON schemas in workers")."""
    convert = functools.partial(grammar_for, body.grammar, body.json_schema, body.response_format)
    try:
        if body.json_schema is None and body.response_format is None:
            return convert()  # GBNF as given: nothing to convert
        return await anyio.to_thread.run_sync(convert)
    except GrammarError as exc:
        raise ApiError(400, str(exc)) from None


def sampling_params(
    model: LoadedModel,
    body: SamplingFields,
    grammar: str | None,
    tool_grammar: str | None = None,
    triggers: tuple[str, ...] = (),
    reasoning_budget: ReasoningBudget | None = None,
) -> SamplingParams:
    """The request's sampling over the worker's defaults (llama-server's
    ``params_from_json_cmpl``), with its biases, budget and grammar: ``grammar`` is the
    request's own (:func:`body_grammar`), else the worker's default, else ``tool_grammar``."""
    sampling = request_sampling(model.sampling, body)
    # A request's own biases replace -l's, as llama-server's (its handler clears the list).
    bias, text_bias = (
        (dict(model.sampling.logit_bias), ())
        if body.logit_bias is None
        else parse_logit_bias(body.logit_bias, model.n_vocab)
    )
    if sampling.ignore_eos:  # as llama-server: end-of-generation tokens are never sampled
        bias.update(dict.fromkeys(model.eog_tokens, -math.inf))
    if grammar is None and tool_grammar is None:
        grammar = _default_grammar(model.settings.grammar, model.settings.json_schema)
    if tool_grammar is not None:
        if grammar is not None:
            raise ApiError(
                400, "tools cannot be combined with grammar, json_schema or response_format"
            )
        grammar = tool_grammar
    else:
        triggers = ()
    return replace(
        sampling,
        logit_bias=bias,
        text_bias=text_bias,
        grammar=grammar,
        grammar_triggers=triggers,
        reasoning_budget=reasoning_budget,
    )


@functools.lru_cache(maxsize=2)
def _default_grammar(grammar: str | None, json_schema: str | None) -> str | None:
    """``--grammar``'s, else ``--json-schema``'s grammar: converted once, not per request."""
    schema = json.loads(json_schema) if json_schema is not None else None
    try:
        return grammar_for(grammar, schema, None)
    except GrammarError as exc:
        # The worker checked it is a JSON object; one the converter cannot take fails here,
        # the server's fault rather than the request's.
        raise ApiError(500, f"the worker's --json-schema: {exc}") from None


def token_budget(model: LoadedModel, *requested: int | None) -> int | None:
    """The first token budget the client gave, else ``--n-predict``; -1 means to the context."""
    budget = next((value for value in requested if value is not None), model.settings.n_predict)
    return None if budget < 0 else budget


async def verbose_prompt(
    engine: Engine,
    model: LoadedModel,
    body: SamplingFields,
    grammar: str | None,
    prompt: list[int],
    budget: int | None,
) -> RenderedPrompt | None:
    """What an OpenAI answer's ``__verbose`` needs, when the request (else ``--verbose``) asks
    for it: the prompt as text and the settings it runs with."""
    if not (model.settings.verbose if body.verbose is None else body.verbose):
        return None
    settings = request_settings(model, body, sampling_params(model, body, grammar), budget)
    text = await engine.call(lambda: model.detokenize(prompt))
    return RenderedPrompt(text, settings)


def _check_context(model: LoadedModel, prompt: list[int]) -> None:
    n_ctx = model.batcher.n_ctx_seq
    if not prompt:
        raise ApiError(400, "the prompt is empty")
    if len(prompt) >= n_ctx:
        error = ApiError(
            400,
            f"request ({len(prompt)} tokens) exceeds the available context size ({n_ctx} "
            "tokens), try increasing it",
            "exceed_context_size_error",
        )
        body = {**msgspec.to_builtins(error.envelope()), "n_prompt_tokens": len(prompt)}
        # Both inside the error too, where llama-server puts them.
        body["error"]["n_ctx"] = n_ctx
        body["error"]["n_prompt_tokens"] = len(prompt)
        raise ContextError(body)


class ContextError(ApiError):
    """llama-server adds the sizes to this one error, so clients can shorten their prompt."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(400, body["error"]["message"], "exceed_context_size_error")
        self.body = body


def context_error_response(request: AnyRequest, exc: ContextError) -> Response[dict[str, Any]]:
    return Response(exc.body, status_code=400)


def prepare_generation(
    model: LoadedModel,
    body: SamplingFields,
    grammar: str | None,
    prompt: list[int],
    max_tokens: int | None,
    tool_grammar: str | None = None,
    grammar_triggers: tuple[str, ...] = (),
    reasoning_budget: ReasoningBudget | None = None,
    media: MediaPrompt | None = None,
) -> MakeGeneration:
    """Check the request against the model and return how to build its generation.

    ``grammar`` is the request's own (:func:`body_grammar`), already GBNF text; llama.cpp parses
    it once, as the generation is queued (:meth:`~worker.engine.batching.BatchEngine.submit`);
    ``grammar_triggers`` make the tool grammar a lazy one.
    """
    params = sampling_params(model, body, grammar, tool_grammar, grammar_triggers, reasoning_budget)
    max_predict_ms = time_limit_ms(body)
    n_indent = indent(body)
    _check_context(model, prompt)
    stops = request_stops(model, body)
    lora = model.adapters.chosen(body.lora, "lora")
    cache_scope = request_cache_scope()  # the request's: read on its task, not the engine's

    def make(emit: Callable[[GenerationEvent], None]) -> Generation:
        return Generation(
            prompt=prompt,
            params=params,
            max_tokens=max_tokens,
            emit=emit,
            stops=stops,
            ignore_eos=params.ignore_eos,
            cache_prompt=model.settings.cache_prompt
            if body.cache_prompt is None
            else body.cache_prompt,
            cache_scope=cache_scope,
            n_cache_reuse=model.settings.cache_reuse
            if body.n_cache_reuse is None
            else body.n_cache_reuse,
            id_slot=body.id_slot,
            media=media,
            lora=lora,
            context_shift=model.settings.context_shift,
            n_keep=model.settings.keep if body.n_keep is None else body.n_keep,
            n_probs=body.n_probs,
            max_predict_ms=max_predict_ms,
            n_indent=n_indent,
            post_sampling_probs=body.post_sampling_probs,
            return_progress=body.stream and body.return_progress,
            timings_per_token=body.stream and body.timings_per_token,
            notify_restore=restore_notify(),
        )

    return make
