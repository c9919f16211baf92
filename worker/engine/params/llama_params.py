"""The worker's flags as llama.cpp's model and context parameters, and the context made from them.

What ``--n-gpu-layers``, ``--mmap``, ``--override-kv``, ``--ctx-size``, ``--cache-type-k`` and the
like become in ``llama_model_params`` and ``llama_context_params``, as llama-server's
``common_model_params_to_llama`` and ``common_context_params_to_llama`` set them.
"""

from __future__ import annotations

from typing import Any

from llama_cpp._utils import suppress_stdout_stderr

from worker.engine.llama_model import LlamaModel
from worker.engine.params.kv_overrides import override_array
from worker.engine.params.rope import set_rope
from worker.host.llama_bindings import llama_cpp
from worker.settings.worker_settings import WorkerSettings

__all__ = ["context_params", "model_params", "new_context"]

# KV cache types by their llama-server names (``--cache-type-k q8_0``).
_GGML_TYPES = {
    "f32": llama_cpp.GGML_TYPE_F32,
    "f16": llama_cpp.GGML_TYPE_F16,
    "bf16": 30,  # GGML_TYPE_BF16 in ggml.h; the Python bindings do not export it
    "q8_0": llama_cpp.GGML_TYPE_Q8_0,
    "q4_0": llama_cpp.GGML_TYPE_Q4_0,
    "q4_1": llama_cpp.GGML_TYPE_Q4_1,
    "iq4_nl": llama_cpp.GGML_TYPE_IQ4_NL,
    "q5_0": llama_cpp.GGML_TYPE_Q5_0,
    "q5_1": llama_cpp.GGML_TYPE_Q5_1,
}
_FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}


def model_params(settings: WorkerSettings) -> Any:
    """The model's load parameters (the progress callback is the loader's to add)."""
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = settings.n_gpu_layers
    params.use_mmap = settings.use_mmap
    params.use_mlock = settings.use_mlock
    params.check_tensors = settings.check_tensors
    if settings.kv_overrides:
        # llama.cpp reads the array while the model loads; ctypes keeps it alive as long as
        # the parameters that point at it (in their ``_objects``).
        params.kv_overrides = override_array(settings.kv_overrides)
    return params


def context_params(settings: WorkerSettings) -> Any:
    """The context's parameters; ``n_ctx`` 0 (unset) is for the fit to choose."""
    params = llama_cpp.llama_context_default_params()
    layout = settings.kv_layout  # the courtesy sequence included, as the router counts it
    params.n_ctx = layout.n_ctx(0)
    params.n_batch = settings.batch_size
    params.n_ubatch = min(settings.ubatch_size, settings.batch_size)
    params.n_seq_max = layout.sequences
    params.kv_unified = settings.kv_unified
    params.swa_full = settings.swa_full  # llama-server's default: the window only
    params.n_threads = settings.threads
    params.n_threads_batch = settings.threads_batch or settings.threads
    params.flash_attn_type = _FLASH_ATTN[settings.flash_attn]
    if settings.rope_freq_base > 0:
        params.rope_freq_base = settings.rope_freq_base
    set_rope(params, settings.rope)
    params.type_k = _GGML_TYPES[settings.cache_type_k]
    params.type_v = _GGML_TYPES[settings.cache_type_v]
    return params


def new_context(model: LlamaModel, params: Any, settings: WorkerSettings) -> Any:
    """The llama context for ``model``; ``ValueError`` when llama.cpp cannot make it."""
    if params.n_ctx == 0:  # no fit ran (--fit off, no GPU, no llama-common)
        # The trained context for each KV stream, as llama-server sizes it (common/fit.cpp)
        # and as the router's memory estimate counts it (corral/options/kv_layout.py).
        params.n_ctx = settings.kv_layout.n_ctx(model.n_ctx_train())
    # llama.cpp narrates context creation on stderr past its log callback; llama-cpp-python
    # silences it the same way. The protocol's private stdout is not affected.
    with suppress_stdout_stderr(disable=False):
        ctx = llama_cpp.llama_init_from_model(model.model, params)
    if ctx is None:
        raise ValueError("failed to create the llama context (out of memory?)")
    return ctx
