"""The worker's ``/metrics`` text: llama-server's ``llamacpp:*`` families from engine counters."""

from __future__ import annotations

from dataclasses import dataclass

from corral.prometheus import prometheus_family
from worker.engine.model import LoadedModel
from worker.engine.thread_count import threads_now

__all__ = ["ScrapeWindow", "render_metrics"]


@dataclass
class ScrapeWindow:
    """The totals at the last scrape: as llama-server's, the throughput gauges cover the
    window between two scrapes, so a quiet (or sleeping) model reads 0, not its history."""

    prompt_tokens: int = 0
    prompt_seconds: float = 0.0
    tokens_predicted: int = 0
    tokens_predicted_seconds: float = 0.0


def render_metrics(model: LoadedModel, window: ScrapeWindow) -> str:
    """The ``llamacpp:*`` text; moves ``window`` on to now (engine thread only)."""
    m = model.metrics
    # Requests decoding: the courtesy sequence's too, though no slot list shows it.
    busy = sum(1 for slot in model.batcher.sequences if slot.generation is not None)

    def rate(tokens: float, seconds: float) -> float:
        return tokens / seconds if seconds > 0 else 0.0

    prompt_rate = rate(
        m.prompt_tokens - window.prompt_tokens, m.prompt_seconds - window.prompt_seconds
    )
    predicted_rate = rate(
        m.tokens_predicted - window.tokens_predicted,
        m.tokens_predicted_seconds - window.tokens_predicted_seconds,
    )
    window.prompt_tokens, window.prompt_seconds = m.prompt_tokens, m.prompt_seconds
    window.tokens_predicted = m.tokens_predicted
    window.tokens_predicted_seconds = m.tokens_predicted_seconds

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
            m.draft_tokens,
        ),
        (
            "spec_decode_num_accepted_tokens_total",
            "Speculative: Total draft tokens accepted by the target model",
            m.draft_accepted,
        ),
        (
            "spec_decode_num_drafts_total",
            "Speculative: Total speculative decoding verification steps",
            m.drafts,
        ),
    ]
    gauges = [
        ("prompt_tokens_seconds", "Average prompt throughput in tokens/s", prompt_rate),
        ("predicted_tokens_seconds", "Average generation throughput in tokens/s",
         predicted_rate),
        ("requests_processing", "Number of requests processing", busy),
        ("requests_deferred", "Number of requests deferred", len(model.batcher.waiting)),
        ("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
         m.n_busy_slots / max(m.n_decode, 1)),
    ]  # fmt: skip
    lines: list[str] = []
    for kind, items in (("counter", counters), ("gauge", gauges)):
        for name, help_, value in items:
            lines += prometheus_family(f"llamacpp:{name}", kind, help_, [("", float(value))])
    return "\n".join(lines + _threads_lines(model) + _kv_cache_lines(model)) + "\n"


def _threads_lines(model: LoadedModel) -> list[str]:
    """Corral's own: what the context computes with now, as llama.cpp reads it back; the
    router shares the cores among busy models (docs/serving.md, "CPU threads"); asleep, what
    it had as it fell asleep."""
    now = threads_now(model)
    if now is None:
        return []
    lines = prometheus_family(
        "corral_threads", "gauge", "Threads generating tokens now", [("", float(now[0]))]
    )
    return lines + prometheus_family(
        "corral_threads_batch", "gauge", "Threads reading prompts now", [("", float(now[1]))]
    )


def _kv_cache_lines(model: LoadedModel) -> list[str]:
    """Corral's own: the prompt cache's tiers (docs/serving.md, "KV cache across restarts").
    The router's ``/metrics?model=X`` passes them on with the ``llamacpp:*`` families."""
    s = model.kv_stats
    files, size = model.kv_store.files() if model.kv_store is not None else (0, 0)
    families = [
        ("bytes_written_total", "counter", "Bytes of KV cache files written", s.bytes_written),
        ("files_written_total", "counter", "KV cache files written", s.files_written),
        ("write_failures_total", "counter", "KV cache files not written (disk full, "
         "read-only folder)", s.write_failures),
        ("writes_coalesced_total", "counter", "Pending writes replaced by a newer state of the "
         "same conversation", s.writes_coalesced),
        ("writes_dropped_total", "counter", "Pending writes dropped: more waited than the "
         "writer keeps", s.writes_dropped),
        ("files", "gauge", "This model's KV cache files on disk", files),
        ("bytes", "gauge", "Bytes of this model's KV cache files on disk", size),
    ]  # fmt: skip
    lines: list[str] = []
    for name, kind, help_, value in families:
        lines += prometheus_family(f"corral_kv_cache_{name}", kind, help_, [("", float(value))])
    # By moment, idle: the engine had no generation running; busy: between two decode steps,
    # while the other streams waited (docs/serving.md, "KV cache across restarts").
    labelled: list[tuple[str, str, str, dict[str, float]]] = [
        ("hits_total", "Prompts whose start came back from a KV cache copy, by tier", "tier",
         {"memory": s.hits_memory, "disk": s.hits_disk}),
        ("restored_tokens_total", "Prompt tokens that came back from a KV cache copy, by tier",
         "tier", {"memory": s.tokens_memory, "disk": s.tokens_disk}),
        ("state_reads_total", "Slot states read out of the context for the disk tier, by "
         "moment", "moment", {"idle": s.state_reads_idle, "busy": s.state_reads_busy}),
        ("state_read_seconds_total", "Time the engine spent reading those states, by moment",
         "moment", {"idle": s.state_read_seconds_idle, "busy": s.state_read_seconds_busy}),
    ]  # fmt: skip
    for name, help_, label, values in labelled:
        samples = [(f'{{{label}="{key}"}}', float(value)) for key, value in values.items()]
        lines += prometheus_family(f"corral_kv_cache_{name}", "counter", help_, samples)
    return lines
