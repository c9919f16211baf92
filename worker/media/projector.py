"""The multimodal projector (``--mmproj``) and prompts tokenized with their media.

One libmtmd context per loaded model, made and used on the engine thread only, like the llama
context it feeds. A :class:`MediaPrompt` holds libmtmd's chunks (text tokens, and preprocessed
images or audio) until the batching engine evaluates them into a slot.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import weakref
from functools import cache
from pathlib import Path
from typing import Any

import structlog
from llama_cpp._utils import suppress_stdout_stderr

from worker.host.errors import InvalidInput
from worker.host.ggml_backends import device_by_name
from worker.host.llama_bindings import llama_cpp
from worker.media.content import MediaFile, Modalities
from worker.settings.groups import ProjectorSettings

__all__ = ["MEDIA_TOKEN", "MediaPrompt", "Projector", "media_marker"]

_log = structlog.get_logger("corral.worker.media")
_GGML_LOG_LEVEL_ERROR = 3


@llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
def _mtmd_log(level: int, text: bytes, _: Any) -> None:
    # libmtmd narrates every image it reads on stderr; only its errors belong in the log.
    if level == _GGML_LOG_LEVEL_ERROR:
        _log.error("libmtmd", message=text.decode("utf-8", "replace").strip())


MEDIA_TOKEN = -1
"""Stands for one media embedding in a prompt's token list: it counts as a prompt token and
matches no text token, so a later prompt's cached prefix stops where the media began."""


@cache
def _mtmd() -> Any:
    """libmtmd's bindings, loaded with the first projector: a worker without ``--mmproj`` never
    needs the library (1.5 MiB of its memory, docs/benchmarks.md, Swaps)."""
    from llama_cpp import mtmd_cpp

    return mtmd_cpp


@cache
def media_marker() -> str:
    """Where a prompt's media go, as llama-server picks it: ``LLAMA_MEDIA_MARKER``, else a
    random marker that no user text will contain by chance (``/props`` shows it)."""
    return os.environ.get("LLAMA_MEDIA_MARKER") or f"<__media_{secrets.token_urlsafe(24)}__>"


class MediaPrompt:
    """A prompt tokenized with its media; evaluate once, on the engine thread."""

    def __init__(self, projector: Projector, chunks: Any) -> None:
        mtmd_cpp = _mtmd()
        self._projector = projector
        self._chunks = chunks
        # Freed when evaluated, or when a request that never reached a slot lets go of it.
        self._free = weakref.finalize(self, mtmd_cpp.mtmd_input_chunks_free, chunks)
        self.tokens: list[int] = []
        self.ends_with_media = False
        for i in range(mtmd_cpp.mtmd_input_chunks_size(chunks)):
            chunk = mtmd_cpp.mtmd_input_chunks_get(chunks, i)
            if mtmd_cpp.mtmd_input_chunk_get_type(chunk) == mtmd_cpp.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t(0)
                text = mtmd_cpp.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                self.tokens += text[: n.value]
                self.ends_with_media = False
            else:
                self.tokens += [MEDIA_TOKEN] * mtmd_cpp.mtmd_input_chunk_get_n_tokens(chunk)
                self.ends_with_media = True

    def evaluate(self, ctx: Any, seq_id: int, n_batch: int) -> int:
        """Decode the whole prompt into ``seq_id`` from position 0, with logits for its last
        token; returns the next position. ``RuntimeError`` when libmtmd fails."""
        mtmd_cpp = _mtmd()
        if self._projector.closed:
            raise RuntimeError("the multimodal projector was unloaded before the prompt ran")
        n_past = llama_cpp.llama_pos(0)
        code = mtmd_cpp.mtmd_helper_eval_chunks(
            self._projector.context, ctx, self._chunks, 0, seq_id, n_batch, True,
            ctypes.byref(n_past),
        )  # fmt: skip
        self._free()
        if code != 0:
            raise RuntimeError(f"evaluating the prompt's media failed (code {code})")
        return int(n_past.value)


class Projector:
    def __init__(
        self,
        path: Path,
        text_model: Any,
        *,
        use_gpu: bool,
        threads: int,
        settings: ProjectorSettings,
    ) -> None:
        mtmd_cpp = _mtmd()
        mtmd_cpp.mtmd_helper_log_set(_mtmd_log, ctypes.c_void_p(0))
        params = mtmd_cpp.mtmd_context_params_default()
        params.use_gpu = use_gpu and settings.device != "none"
        if settings.device not in (None, "none"):
            params.device = device_by_name(settings.device)
        params.warmup = settings.warmup
        for name in ("image_min_tokens", "image_max_tokens", "batch_max_tokens"):
            if (value := getattr(settings, name)) is not None:
                setattr(params, name, value)
        params.print_timings = False
        params.n_threads = threads
        self._marker = media_marker().encode()  # kept: libmtmd copies it, ctypes must not free
        params.media_marker = self._marker
        with suppress_stdout_stderr(disable=False):
            context = mtmd_cpp.mtmd_init_from_file(str(path).encode(), text_model, params)
        if not context:
            raise ValueError(f"failed to load the multimodal projector {path}")
        self.context = context
        self.closed = False
        self.modalities = Modalities(
            vision=bool(mtmd_cpp.mtmd_support_vision(context)),
            audio=bool(mtmd_cpp.mtmd_support_audio(context)),
        )

    def close(self) -> None:
        mtmd_cpp = _mtmd()
        if not self.closed:
            mtmd_cpp.mtmd_free(self.context)
            self.closed = True

    def _bitmap(self, file: MediaFile) -> Any:
        mtmd_cpp = _mtmd()
        buffer = (ctypes.c_uint8 * len(file.data)).from_buffer_copy(file.data)
        bitmap = mtmd_cpp.mtmd_helper_bitmap_init_from_buf(
            self.context, buffer, len(file.data), False
        )
        if not bitmap:
            raise InvalidInput(f"{file.field}: failed to load the image or audio file")
        return bitmap

    def audio_seconds(self, file: MediaFile) -> float:
        """How long an audio file plays, as libmtmd decodes it (at the projector's sample rate):
        what a transcription's segments span. 400 when it cannot be read."""
        mtmd_cpp = _mtmd()
        bitmap = self._bitmap(file)
        try:
            samples = int(mtmd_cpp.mtmd_bitmap_get_nx(bitmap))
        finally:
            mtmd_cpp.mtmd_bitmap_free(bitmap)
        return samples / max(int(mtmd_cpp.mtmd_get_audio_sample_rate(self.context)), 1)

    def tokenize(self, text: str, files: list[MediaFile], *, add_special: bool) -> MediaPrompt:
        """``text`` with one media marker per file; 400 for unreadable media or a marker count
        that does not match."""
        mtmd_cpp = _mtmd()
        markers = text.count(media_marker())
        if markers != len(files):
            raise InvalidInput(
                f"the prompt has {markers} media markers ({media_marker()}) for {len(files)} "
                "media files",
            )
        bitmaps: list[Any] = []
        try:
            for file in files:
                bitmaps.append(self._bitmap(file))
            chunks = mtmd_cpp.mtmd_input_chunks_init()
            encoded = text.encode()
            inp = mtmd_cpp.mtmd_input_text(encoded, len(encoded), add_special, True)
            array = (mtmd_cpp.mtmd_bitmap_p_ctypes * len(bitmaps))(*bitmaps)
            code = mtmd_cpp.mtmd_tokenize(
                self.context, chunks, ctypes.byref(inp), array, len(bitmaps)
            )
            if code != 0:
                mtmd_cpp.mtmd_input_chunks_free(chunks)
                raise InvalidInput(f"failed to tokenize the prompt with its media (code {code})")
            prompt = MediaPrompt(self, chunks)
        finally:
            for bitmap in bitmaps:  # the chunks hold their own copy of each
                mtmd_cpp.mtmd_bitmap_free(bitmap)
        if prompt.ends_with_media:
            # Media embeddings give no logits to sample the first token from.
            raise InvalidInput("the prompt must not end with a media marker: add text after it")
        return prompt
