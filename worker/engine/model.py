"""One loaded GGUF: the model, its batching context, its chat template (engine thread only).

Built on llama-cpp-python's low-level API: the high-level ``Llama`` object serves one sequence
at a time, while continuous batching needs a context with ``n_seq_max = --parallel``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from typing import Any

import structlog

from worker.cache.checkpoints import Checkpoints
from worker.cache.kv_store import KvStats, open_kv_store
from worker.cache.kv_writer import KvWriter
from worker.cache.prompt_cache import PromptCache, SetAside
from worker.cache.slot_cache import SlotCaches
from worker.devices.inventory import gpu_devices
from worker.devices.offload import Offload
from worker.engine.batching import BatchEngine
from worker.engine.beside import beside
from worker.engine.embedding_context import Embedder
from worker.engine.generation import EngineMetrics
from worker.engine.llama_model import LlamaModel
from worker.engine.lora_adapters import LoraAdapters
from worker.engine.params.control_vectors import apply_control_vectors
from worker.engine.params.llama_params import context_params, model_params, new_context
from worker.engine.prompt_inputs import Tokenize
from worker.engine.prompt_layouts import infill_tokens, rerank_tokens
from worker.host.layer_placement import LayerPlacement
from worker.host.llama_bindings import llama_cpp
from worker.media.content import Modalities
from worker.media.projector import Projector
from worker.rpc.devices import add_rpc_servers, rpc_device_labels
from worker.sampling.server_defaults import model_sampling_defaults
from worker.sampling.text import token_piece
from worker.settings.worker_settings import WorkerSettings
from worker.speculative import Speculator, fitted_draft
from worker.templates import ChatTemplates, RenderRequest, TemplateChoice, VocabTokens

__all__ = ["LoadedModel"]

_log = structlog.get_logger("corral.worker.model")

# States waiting for the disk tier's writer, per slot, before the oldest is dropped.
_PENDING_PER_SLOT = 2

_NUMA = {
    "distribute": llama_cpp.GGML_NUMA_STRATEGY_DISTRIBUTE,
    "isolate": llama_cpp.GGML_NUMA_STRATEGY_ISOLATE,
    "numactl": llama_cpp.GGML_NUMA_STRATEGY_NUMACTL,
}


class LoadedModel:
    threads_asleep: tuple[int, int] | None = None  # set as it falls asleep (thread_count.py)

    def __init__(self, settings: WorkerSettings, on_progress: Callable[[float], None]) -> None:
        self.settings = settings
        self.metrics = EngineMetrics()  # kept across sleeps, like the process's other counters
        # Their global scales too; the adapters themselves are loaded again on wake.
        self.adapters = LoraAdapters(settings.lora, apply=not settings.lora_init_without_apply)
        llama_cpp.llama_backend_init()
        if settings.numa is not None:  # as llama-server, right after the back-end's start
            llama_cpp.llama_numa_init(_NUMA[settings.numa])
        add_rpc_servers(settings.rpc)  # before the load, which picks its devices
        self.kv_stats = KvStats()  # the disk tier's and the copies' counters, kept across sleeps
        self.kv_store = open_kv_store(settings, self.kv_stats)
        # The disk tier: each request's cache and each copy in memory is written in the
        # background (worker/cache/kv_writer.py); a few states per slot may wait for the disk.
        self.kv_writer = (
            None
            if self.kv_store is None
            else KvWriter(self.kv_store.write, self.kv_stats, _PENDING_PER_SLOT * settings.parallel)
        )
        self.offload = Offload(settings.gpu, settings.n_gpu_layers, settings.alias)
        self._load(on_progress, beside_context=self._read_vocabulary)
        if self.template.name == "chatml" and settings.chat_template is None:
            _log.warning("model has no chat template, using chatml", model=settings.alias)
        # Answered while asleep without waking (``/props``, ``/v1/models``), as upstream does.
        self.snapshot = self._describe()
        self.sleeping = False

    def _read_vocabulary(self) -> None:
        """The chat template and the end-of-generation tokens: the vocabulary's, read once
        (20-60 ms of Python for a 50k-token vocabulary, beside the context's creation)."""
        settings = self.settings
        self.template = ChatTemplates(
            TemplateChoice(
                use_jinja=settings.jinja,
                override=settings.chat_template,
                gguf_default=self.metadata.get("tokenizer.chat_template"),
                gguf_tool_use=self.metadata.get("tokenizer.chat_template.tool_use"),
            ),
            VocabTokens(
                bos_token=self._special_text(llama_cpp.llama_vocab_bos(self.vocab)),
                eos_token=self._special_text(llama_cpp.llama_vocab_eos(self.vocab)),
                add_bos=bool(llama_cpp.llama_vocab_get_add_bos(self.vocab)),
                add_eos=bool(llama_cpp.llama_vocab_get_add_eos(self.vocab)),
            ),
            kwargs=settings.chat_template_kwargs,
        )
        # What a request that names no sampling field gets: the flags, else the model file's.
        self.sampling = model_sampling_defaults(
            settings.sampling, self.metadata, settings.options_given
        )
        # End-of-generation tokens, which `ignore_eos` bans as llama-server does (by bias).
        self.eog_tokens = tuple(
            t for t in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(self.vocab, t)
        )

    def _load(
        self,
        on_progress: Callable[[float], None],
        beside_context: Callable[[], None] | None = None,
    ) -> None:
        """The weights, the context, then what serves beside them; ``beside_context`` runs
        while the context is made. Each step's resource is registered on a stack as it is
        acquired: when a later step fails, the earlier ones are released, the last first."""
        settings = self.settings
        load_params, ctx_params = model_params(settings), context_params(settings)
        # As llama-server: --fit on shrinks what was left unset to the devices' free memory.
        self.offload.prepare(
            str(settings.model),
            load_params,
            ctx_params,
            draft=fitted_draft(settings.speculative),
            draft_layers=settings.speculative.n_gpu_layers_draft,
        )

        def progress(value: float, _: Any) -> bool:
            on_progress(value)
            return True  # keep loading

        # Kept on self: ctypes would free the callback while llama.cpp still holds it.
        self._progress = llama_cpp.llama_progress_callback(progress)
        load_params.progress_callback = self._progress
        with ExitStack() as acquired:
            placement = self._load_model(acquired, load_params, ctx_params, beside_context)
            labels = rpc_device_labels()
            self.devices = self.offload.placed(placement.devices(labels))
            self.gpu_devices = gpu_devices(labels)  # what the model left free
            self.fit_report = self.offload.report(self.devices, len(self.gpu_devices))
            self.projector: Projector | None = None
            if settings.mmproj is not None:
                self.projector = Projector(
                    settings.mmproj,
                    self.model.model,
                    use_gpu=settings.mmproj_offload,
                    threads=self._threads,
                    settings=settings.projector,
                )
                acquired.callback(self.projector.close)
            self.adapters.load(self.model.model)  # the adapters are freed with the model
            self.embeddings: Embedder | None = None  # made on first use: embedder()
            self.speculator = Speculator.load(
                settings.speculative,
                target_vocab=self.vocab,
                n_ctx=self.n_ctx,
                n_seq=settings.kv_layout.sequences,
                n_batch=settings.batch_size,
                threads=self._threads,
                gpu=self.offload.gpu,  # on fake GPUs (a test seam), the CPU
            )
            if self.speculator is not None:
                acquired.callback(self.speculator.close)
            self._batching(settings)
            acquired.pop_all()  # all loaded: close() releases them from here on

    def _load_model(
        self,
        acquired: ExitStack,
        load_params: Any,
        ctx_params: Any,
        beside_context: Callable[[], None] | None,
    ) -> LayerPlacement:
        """The weights and their context, each registered on ``acquired``; MemoryError naming
        the device (docs/protocol.md §1) when llama.cpp ran out of memory for them."""
        settings = self.settings

        def make_context() -> Any:  # once the model below is loaded
            ctx = new_context(self.model, ctx_params, settings)
            acquired.callback(llama_cpp.llama_free, ctx)
            apply_control_vectors(
                ctx, self.model.model, settings.control_vectors, settings.control_vector_layers
            )
            return ctx

        placement = LayerPlacement()  # the model's and its context's buffers
        try:
            with placement:
                self.model = LlamaModel(str(settings.model), load_params)
                acquired.callback(self.model.close)
                self.vocab = self.model.vocab
                self.n_vocab = self.model.n_vocab()
                # llama.cpp indexes the logits by these ids unchecked: refused at load.
                for token in settings.sampling.logit_bias:
                    if not 0 <= token < self.n_vocab:
                        raise ValueError(
                            f"--logit-bias: token id {token} is outside the vocabulary "
                            f"({self.n_vocab} tokens)"
                        )
                self.metadata = self.model.metadata()
                self.ctx = (
                    make_context()
                    if beside_context is None
                    else beside(beside_context, make_context)
                )
        except Exception:
            acquired.close()  # the model (all there is yet) goes before the free memory is read
            oom = placement.out_of_memory()
            if oom is not None:  # the reason the router reads (docs/protocol.md §1)
                raise MemoryError(oom.format()) from None
            raise
        return placement

    def _batching(self, settings: WorkerSettings) -> None:
        """The prompt cache and the batching engine over the loaded context."""
        store = self.kv_store
        # llama-server's: --cache-ram 0 turns the cache off, and with it the idle slots' clearing.
        cache_ram = settings.cache_ram_mib
        writer = self.kv_writer
        on_keep = None
        if writer is not None:  # every copy kept in memory is written to disk too

            def on_keep(copy: SetAside) -> None:
                writer.put(copy.saved, copy.state)

        self.prompt_cache = (
            PromptCache(self.ctx, None if cache_ram < 0 else cache_ram << 20, on_keep)
            if cache_ram
            else None
        )
        self.batcher = BatchEngine(
            self.ctx,
            self.vocab,
            self.n_vocab,
            settings.parallel,
            settings.batch_size,
            self.metrics,
            self.adapters,
            courtesy=settings.kv_layout.courtesy,
            speculator=self.speculator,
            slot_cap=settings.kv_layout.slot_cap,
            caches=SlotCaches(
                self.ctx,
                restore=None if store is None else partial(store.restore, self.ctx),
                prompt_cache=self.prompt_cache,
                idle_aside=settings.kv_unified and settings.cache_idle_slots,
                checkpoints=Checkpoints.for_context(
                    self.ctx,
                    self.model.model,
                    settings.swa_full,
                    settings.ctx_checkpoints,
                    settings.checkpoint_min_step,
                ),
                writer=writer,
                stats=self.kv_stats,
            ),
        )

    @property
    def embedding_pooling(self) -> str | None:
        """The embeddings context's pooling: ``--pooling`` (else the GGUF's) with
        ``--embeddings``; for a generative model asked anyway (Ollama's ``/api/embed``), a pooled
        one: ``--pooling`` if it pools, else the last token's state, as Ollama's runner reads it."""
        pooling = self.settings.pooling
        if self.settings.embeddings or pooling in ("mean", "cls", "last"):
            return pooling
        return "last"

    def embedder(self) -> Embedder:
        """The embeddings context, made on first use. It is a second llama context beside the
        generation's (sharing the weights), so chat requests are untouched by it."""
        if self.embeddings is None:
            self.embeddings = Embedder(
                self.model.model, self.batcher.n_ctx_seq, self._threads, self.embedding_pooling
            )
        return self.embeddings

    def sleep(self) -> None:
        """Free the weights and the KV cache; :meth:`wake` loads them again. ``/metrics`` asleep
        reads the threads the context had, as llama-server's snapshot taken on entering sleep."""
        ctx = self.ctx
        self.threads_asleep = llama_cpp.llama_n_threads(ctx), llama_cpp.llama_n_threads_batch(ctx)
        self.close()
        for slot in self.batcher.sequences:  # their caches went with the context
            slot.tokens = []
        self.sleeping = True

    def wake(self, on_progress: Callable[[float], None]) -> None:
        self._load(on_progress)
        self.sleeping = False

    @property
    def _threads(self) -> int:
        return self.settings.threads

    def _special_text(self, token: int) -> str:
        return (
            token_piece(self.vocab, token, special=True).decode("utf-8", "replace")
            if (token >= 0)
            else ""
        )

    def close(self) -> None:
        if self.embeddings is not None:
            self.embeddings.close()
            self.embeddings = None
        self.batcher.close()  # a generation cut short hands its state to the writer too
        if self.kv_store is not None:  # before the caches go with the context
            # What the writer holds first, then each slot's cache unless a file holds it (a
            # request's end wrote it already); the copies in memory were written as they came.
            if self.kv_writer is not None:
                self.kv_writer.flush()
            slots = [(s.id, s.held) for s in self.batcher.slots]
            try:
                self.kv_store.save(self.ctx, slots)
            except Exception:  # a cache is worth less than a clean stop
                _log.exception("kv caches not saved")
        if self.prompt_cache is not None:  # copies of caches the context held: gone with it
            self.prompt_cache.clear()
        if self.projector is not None:
            self.projector.close()
        if self.speculator is not None:
            self.speculator.close()
        llama_cpp.llama_free(self.ctx)
        self.model.close()

    @property
    def modalities(self) -> Modalities:
        """What the projector reads besides text (nothing without ``--mmproj``)."""
        return self.projector.modalities if self.projector is not None else Modalities()

    @property
    def n_ctx(self) -> int:
        return int(llama_cpp.llama_n_ctx(self.ctx))

    def info(self) -> dict[str, Any]:
        return self.snapshot

    def _describe(self) -> dict[str, Any]:
        return {
            "id": self.settings.alias,
            "aliases": list(self.settings.aliases),
            "tags": list(self.settings.tags),
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {
                "vocab_type": self.model.vocab_type(),
                "n_vocab": self.n_vocab,
                "n_ctx": self.n_ctx,
                "n_ctx_slot": self.batcher.n_ctx_seq,
                "n_ctx_train": self.model.n_ctx_train(),
                "n_embd": self.model.n_embd(),
                "n_params": self.model.n_params(),
                "size": self.model.size(),
                "n_parallel": self.settings.parallel,
                "chat_template": self.template.name,
                # Corral's: what /props calls chat_template_caps, for the router's /models.
                "chat_template_caps": self.template.props_caps(),
                # Corral's: where the layers went (--rpc, GPU builds; docs/api.md).
                "devices": self.devices,
                # Corral's: what --fit decided (docs/api.md).
                "fit": self.fit_report,
            },
        }

    def tokenize(self, text: str, *, add_special: bool, parse_special: bool = True) -> list[int]:
        tokens: list[int] = self.model.tokenize(text.encode(), add_special, parse_special)
        return tokens

    def piece(self, token: int, special: bool = True) -> bytes:
        return token_piece(self.vocab, token, special)

    def detokenize(self, tokens: list[int]) -> str:
        bad = [token for token in tokens if not 0 <= token < self.n_vocab]
        if bad:
            raise ValueError(f"token id {bad[0]} is out of range (vocabulary has {self.n_vocab})")
        return b"".join(self.piece(token) for token in tokens).decode("utf-8", "replace")

    def chat_prompt(self, request: RenderRequest) -> list[int]:
        # As llama-server: the rendered prompt has lost the template's leading BOS text, and
        # tokenizing adds BOS when the vocabulary asks for it, so the model gets it once.
        return self.tokenize(self.template.render(request), add_special=True)

    def infill_prompt(
        self, prefix: str, suffix: str, prompt: str, extra: list[tuple[str, str]]
    ) -> list[int]:
        """llama-server's fill-in-the-middle layout (:func:`infill_tokens`)."""
        return infill_tokens(self.model, prefix, suffix, prompt, extra, self.settings.spm_infill)

    def rerank_prompt(self, query: str, document: str) -> list[int]:
        """llama-server's reranking input for one document (:func:`rerank_tokens`)."""
        return rerank_tokens(self.model, query, document)

    def prompt_tokenizer(self) -> Tokenize:
        """Tokenize as llama-server does raw prompts: BOS (if the model wants one) only where
        asked, special tokens parsed."""
        add_bos = bool(self.model.add_bos_token())
        return lambda text, first: self.tokenize(text, add_special=first and add_bos)
