"""A worker's settings: what its flags (:mod:`worker.settings.parse`) come to.

Each field is filled by an option row whose ``dest`` names it (:mod:`corral.options.rows`) or by
a named derivation (:mod:`worker.settings.derived`); tests/worker/settings checks that every
field is one or the other. The defaults are llama-server's, read from the option table, for
settings built without flags (tests, tools).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corral.children.environment import DEFAULT_MAX_BODY
from corral.options.kv_layout import KvLayout, kv_layout
from corral.options.model_options import ModelOptions
from worker.devices.settings import GpuSettings
from worker.media.rules import MediaRules
from worker.rpc.endpoints import Endpoint
from worker.sampling.params import SamplingParams
from worker.settings.groups import ProjectorSettings, RopeSettings
from worker.speculative.settings import SpeculativeSettings

__all__ = ["DEFAULT_KV_CACHE_MAX", "WorkerSettings", "default_kv_cache_dir"]

# llama-server's defaults (the option table's), for settings built without flags (tests, tools).
_SERVER = ModelOptions()
_SERVER_KV = kv_layout(_SERVER)
DEFAULT_KV_CACHE_MAX = _SERVER.integer("kv-cache-max")


def default_kv_cache_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/corral/kv``, else ``~/.cache/corral/kv``: beside Corral's other caches."""
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "corral" / "kv"


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    model: Path
    alias: str  # the model's id: the first of its names in sorted order, as llama-server's
    aliases: tuple[str, ...] = ()  # every --alias name (a comma list, as llama-server takes)
    tags: tuple[str, ...] = ()  # --tags: informational, listed in /models as llama-server does
    host: str = "127.0.0.1"
    port: int = 0
    # Run alone as llama-server (worker/host/access.py); the router passes neither key nor origins.
    api_keys: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ("*",)
    allowed_hosts: tuple[str, ...] = ()  # Host names besides loopback ones (corral/http/hosts.py)
    # The defaults are llama-server's (docs/serving.md, Defaults): 0 = the trained context.
    ctx_size: int = _SERVER_KV.ctx_size
    threads: int = 1
    threads_batch: int | None = None  # prompt (batch) threads; None: as many as --threads
    batch_size: int = _SERVER.integer("batch-size")
    ubatch_size: int = _SERVER.integer("ubatch-size")
    n_gpu_layers: int = -1  # as llama.cpp's common: -1 auto (the fit may lower it), -2 all
    rpc: tuple[Endpoint, ...] = ()  # RPC servers whose devices take offloaded layers
    n_predict: int = _SERVER.integer("n-predict")
    sampling: SamplingParams = field(default_factory=SamplingParams)  # --temp, --top-k, …
    # The options given (names): a model file's general.sampling.* fills in the others.
    options_given: frozenset[str] = frozenset()
    chat_template: str | None = None  # --chat-template, or --chat-template-file's text
    jinja: bool = _SERVER.flag("jinja")
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    # on, off or auto: enable_thinking's default (docs/tool-calls.md)
    reasoning: str = _SERVER.word("reasoning")
    # none, deepseek, deepseek-legacy or auto (docs/tool-calls.md)
    reasoning_format: str = _SERVER.word("reasoning-format")
    # template or generic: tools for a template with no tool-call syntax (docs/tool-calls.md)
    tool_mode: str = _SERVER.word("tool-mode")
    reasoning_budget: int = _SERVER.integer("reasoning-budget")  # tokens of thinking; -1: unlimited
    # Written before the forced end tag
    reasoning_budget_message: str = _SERVER.word("reasoning-budget-message")
    use_mmap: bool = _SERVER.flag("mmap")
    use_mlock: bool = _SERVER.flag("mlock")
    flash_attn: str = _SERVER.word("flash-attn")  # on, off or auto
    numa: str | None = None  # distribute, isolate or numactl: llama_numa_init's strategy
    cpus: frozenset[int] | None = None  # -C and -Cr: every thread's CPUs; None: as started
    priority: int = 0  # --prio: -1 low … 3 realtime; 0 leaves the threads' niceness as it is
    parallel: int = _SERVER_KV.slots
    kv_unified: bool = _SERVER_KV.unified  # one KV cache shared by the slots
    kv_unified_per_slot: int = _SERVER_KV.per_slot  # a slot's most tokens; 0: no cap
    courtesy_slot: bool = _SERVER.flag("courtesy-slot")  # one hidden sequence more (router's)
    # A sliding-window model keeps its whole context in the window layers too (more memory)
    swa_full: bool = _SERVER.flag("swa-full")
    ctx_checkpoints: int = _SERVER.integer("ctx-checkpoints")  # per slot; 0 or less: none
    checkpoint_min_step: int = _SERVER.integer("checkpoint-min-step")  # tokens; 0: no minimum
    sleep_idle_seconds: float | None = None  # free the weights after this long without work
    embeddings: bool = _SERVER.flag("embeddings")
    pooling: str | None = None  # none, mean, cls, last, rank; None: the model's own
    # Implies embeddings and rank pooling, as upstream's --reranking
    reranking: bool = _SERVER.flag("reranking")
    rope_freq_base: float = 0.0
    rope: RopeSettings = field(default_factory=RopeSettings)
    check_tensors: bool = _SERVER.flag("check-tensors")
    kv_overrides: tuple[tuple[str, str, str], ...] = ()  # --override-kv: (key, type, value)
    cache_type_k: str = _SERVER_KV.type_k
    cache_type_v: str = _SERVER_KV.type_v
    mmproj: Path | None = None  # the multimodal projector the router paired (docs/serving.md)
    mmproj_offload: bool = _SERVER.flag("mmproj-offload")
    projector: ProjectorSettings = field(default_factory=ProjectorSettings)
    endpoint_slots: bool = _SERVER.flag("slots")  # GET /slots; --no-slots answers 501, as upstream
    slot_save_path: Path | None = None  # POST /slots/{id}: no path, no save/restore (501)
    media_path: Path | None = None  # file:// media come from here; none: file:// refused (400)
    # URL media may name private, loopback and link-local hosts (docs/security.md)
    media_allow_private: bool = _SERVER.flag("media-allow-private")
    # A request's media in all, however given: the router's --max-body (MAX_BODY_ENV)
    media_max_bytes: int = DEFAULT_MAX_BODY
    # Copies of slot caches in host memory; -1: no cap, 0: none
    cache_ram_mib: int = _SERVER.integer("cache-ram")
    # With a unified cache, idle slots' caches go to those copies
    cache_idle_slots: bool = _SERVER.flag("cache-idle-slots")
    # The disk tier: slot caches written in the background and at a stop (worker/cache/).
    kv_persist: bool = _SERVER.flag("kv-persist")
    kv_cache_dir: Path = Path("kv-cache")
    kv_cache_max: int = _SERVER.integer("kv-cache-max")
    lora: tuple[tuple[str, float], ...] = ()  # adapter files and their scales, ids in order
    control_vectors: tuple[tuple[str, float], ...] = ()  # files and their scales
    control_vector_layers: tuple[int, int] = (-1, -1)  # first, last; -1: the model's
    lora_init_without_apply: bool = _SERVER.flag("lora-init-without-apply")
    speculative: SpeculativeSettings = field(default_factory=SpeculativeSettings)
    gpu: GpuSettings = field(default_factory=GpuSettings)
    # /metrics answers 501 without it, as llama-server's --metrics
    metrics: bool = _SERVER.flag("metrics")
    context_shift: bool = _SERVER.flag("context-shift")
    # Answers carry __verbose unless the request says otherwise
    verbose: bool = _SERVER.flag("verbose")
    keep: int = _SERVER.integer("keep")  # prompt tokens a context shift keeps; -1: all
    # Defaults of requests that give none (--grammar[-file], --json-schema[-file], -r): GBNF
    # text, a JSON Schema as JSON text, stop strings.
    grammar: str | None = None
    json_schema: str | None = None
    reverse_prompt: tuple[str, ...] = ()
    ui_settings: dict[str, Any] = field(default_factory=dict)  # --ui-config, for /props
    # Seconds of silence before an SSE ping; <= 0: never
    sse_ping_interval: int = _SERVER.integer("sse-ping-interval")
    # Requests that do not say reuse the slot's cached prompt
    cache_prompt: bool = _SERVER.flag("cache-prompt")
    spm_infill: bool = _SERVER.flag("spm-infill")  # /infill: suffix before prefix
    cache_reuse: int = _SERVER.integer("cache-reuse")  # --cache-reuse: shortest chunk shifted
    # A last assistant message is continued, unasked
    prefill_assistant: bool = _SERVER.flag("prefill-assistant")
    # How pooled embeddings are normalised; -1: not (Euclidean: 2)
    embd_normalize: int = _SERVER.integer("embd-normalize")
    # Options given that have no effect (their row's no_effect says why), logged at startup.
    ignored: dict[str, str] = field(default_factory=dict)
    # llama-server flags a worker has no use for (--models-dir, --threads-http, …), as given.
    no_effect_flags: tuple[str, ...] = ()

    @property
    def media_rules(self) -> MediaRules:
        """What a request's media may make this worker read (worker/media/rules.py)."""
        return MediaRules(self.media_path, self.media_allow_private, self.media_max_bytes)

    @property
    def kv_layout(self) -> KvLayout:
        """The KV cache's layout, as the router's memory estimate computes it."""
        return KvLayout(
            self.parallel,
            self.kv_unified,
            self.ctx_size,
            self.cache_type_k,
            self.cache_type_v,
            self.kv_unified_per_slot,
            int(self.courtesy_slot),
        )
