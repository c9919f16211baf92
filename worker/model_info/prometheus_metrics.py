"""The worker's ``/metrics`` text: llama-server's ``llamacpp:*`` families from engine counters."""

from __future__ import annotations

from corral.prometheus import prometheus_family
from worker.model import LoadedModel

__all__ = ["render_metrics"]


def render_metrics(model: LoadedModel) -> str:
    m = model.metrics
    busy = sum(1 for slot in model.batcher.slots if slot.generation is not None)

    def rate(tokens: float, seconds: float) -> float:
        return tokens / seconds if seconds else 0.0

    counters = [
        (
            "prompt_tokens_total",
            "Number of prompt tokens processed, excluding cached tokens",
            m.prompt_tokens,
        ),
        (
            "prompt_tokens_cached_total",
            "Number of prompt tokens reused from the cache",
            m.prompt_tokens_cached,
        ),
        ("prompt_seconds_total", "Total time spent processing prompts", m.prompt_seconds),
        ("tokens_predicted_total", "Number of generation tokens processed", m.tokens_predicted),
        (
            "tokens_predicted_seconds_total",
            "Total time spent generating tokens",
            m.tokens_predicted_seconds,
        ),
        (
            "n_decode_total",
            "Total number of llama_decode() calls, excluding speculative decoding and "
            "multimodal decoding",
            m.n_decode,
        ),
        ("n_tokens_max", "Largest observed sequence length (prompt + generation)", m.n_tokens_max),
        (
            "spec_decode_num_draft_tokens_total",
            "Speculative: Total draft tokens generated",
            m.n_draft_tokens,
        ),
        (
            "spec_decode_num_accepted_tokens_total",
            "Speculative: Total draft tokens accepted by the target model",
            m.n_draft_accepted,
        ),
        (
            "spec_decode_num_drafts_total",
            "Speculative: Total speculative decoding verification steps",
            m.n_draft_verif_steps,
        ),
    ]
    gauges = [
        ("prompt_tokens_seconds", "Average prompt throughput in tokens/s",
         rate(m.prompt_tokens, m.prompt_seconds)),
        ("predicted_tokens_seconds", "Average generation throughput in tokens/s",
         rate(m.tokens_predicted, m.tokens_predicted_seconds)),
        ("requests_processing", "Number of requests processing", busy),
        ("requests_deferred", "Number of requests deferred", len(model.batcher.waiting)),
        ("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
         m.n_busy_slots / max(m.n_decode, 1)),
    ]  # fmt: skip
    lines: list[str] = []
    for kind, items in (("counter", counters), ("gauge", gauges)):
        for name, help_, value in items:
            lines += prometheus_family(f"llamacpp:{name}", kind, help_, [("", float(value))])
    return "\n".join(lines) + "\n"
