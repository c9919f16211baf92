"""llama-server's ``--fit on``: llama.cpp's own ``common_fit_params``, called before the load.

The fit (common/fit.cpp) measures the model with ``no_alloc`` loads against each device's free
memory and changes only what was left unset: an automatic context (``n_ctx`` 0) shrinks toward
``--fit-ctx``, then, when ``-ngl`` was not given (-1), layers move to the CPU, until every device
keeps its ``--fit-target`` margin. It lives in llama.cpp's ``llama-common`` library, which
llama-cpp-python's build installs beside its package (``site-packages/lib``, llama.cpp's own
install rule) without binding it. Its signature has only C types, so ctypes calls it by its
exported (mangled, C++) name; it shares ``libllama`` with the bindings, since the loader finds
that library loaded already under its soname.

Without the library (a build from elsewhere) the fit is skipped with one warning and the model
loads as told, as ``--fit off``; so it is without a GPU (:func:`fit_params`).
"""

from __future__ import annotations

import ctypes
import enum
import sys
from pathlib import Path
from typing import Any

import structlog
from llama_cpp._utils import suppress_stdout_stderr

from worker.devices.inventory import gpu_devices
from worker.devices.params import DeviceParams
from worker.host.llama_bindings import llama_cpp

__all__ = ["ExtraModel", "FitStatus", "common_fit", "fit_params", "llama_common"]

_log = structlog.get_logger("corral.worker.fit")

# common/fit.h, as the C++ compiler names it (Itanium ABI, every platform but MSVC).
_FIT_SYMBOL = (
    "_Z17common_fit_paramsPKcP18llama_model_paramsP20llama_context_paramsPfP32"
    "llama_model_tensor_buft_overridePmjPK22common_fit_extra_model14ggml_log_level"
)
_GGML_LOG_LEVEL_ERROR = 4  # enum ggml_log_level: the fit's own loads log below it as debug
_MIB = 1 << 20


class FitStatus(enum.IntEnum):
    """enum common_params_fit_status, and OFF for a fit that did not run."""

    SUCCESS = 0  # projected to fit
    FAILURE = 1  # no allocation projected to fit: the parameters stay as they were
    ERROR = 2  # a hard error (the model could not be read)
    OFF = -1


def _library_names() -> tuple[str, ...]:
    if sys.platform == "darwin":
        return ("libllama-common.dylib",)
    if sys.platform == "win32":
        return ("llama-common.dll",)
    return ("libllama-common.so", "libllama-common.so.0")


class ExtraModel(ctypes.Structure):
    """``struct common_fit_extra_model`` (common/fit.h): a model fitted with the main one, as
    llama-server fits a draft model; its context follows the main one's."""

    _fields_ = (
        ("path_model", ctypes.c_char_p),
        ("mparams", ctypes.POINTER(llama_cpp.llama_model_params)),
        ("cparams", ctypes.POINTER(llama_cpp.llama_context_params)),
        ("shares_model", ctypes.c_bool),
    )


_loaded: list[Any] = []  # the library, once found (or None once looked for in vain)


def _find_library() -> Any | None:
    package = Path(llama_cpp.__file__).resolve().parent
    for folder in (package / "lib", package.parent / "lib"):
        for name in _library_names():
            if (folder / name).exists():
                try:
                    library = ctypes.CDLL(str(folder / name))
                except OSError as error:  # a library it needs is missing (libssl)
                    _log.warning("llama-common does not load", error=str(error))
                    return None
                return library if hasattr(library, _FIT_SYMBOL) else None
    return None


def llama_common() -> Any | None:
    """``libllama-common`` of the installed bindings, or None when it is not there."""
    if not _loaded:
        library = _find_library()
        if library is None:
            _log.warning(
                "llama.cpp's llama-common library is not installed with the bindings: models "
                "load without --fit (rebuild them with scripts/bootstrap.py)"
            )
        else:
            fit = getattr(library, _FIT_SYMBOL)
            fit.restype = ctypes.c_int
            fit.argtypes = [
                ctypes.c_char_p,
                ctypes.POINTER(llama_cpp.llama_model_params),
                ctypes.POINTER(llama_cpp.llama_context_params),
                ctypes.c_void_p,  # float * tensor_split
                ctypes.c_void_p,  # llama_model_tensor_buft_override *
                ctypes.c_void_p,  # size_t * margins
                ctypes.c_uint32,
                ctypes.POINTER(ExtraModel),  # or None
                ctypes.c_int,
            ]
        _loaded.append(library)
    return _loaded[0]


def _margins(target_mib: tuple[int, ...]) -> Any:
    # As common/arg.cpp --fit-target: one value for every device, else one per device in order
    # (the others keep the 1024 MiB default).
    count = llama_cpp.llama_max_devices()
    values = [1024 * _MIB] * count
    if len(target_mib) == 1:
        values = [target_mib[0] * _MIB] * count
    else:
        values[: len(target_mib)] = [mib * _MIB for mib in target_mib[:count]]
    return (ctypes.c_size_t * count)(*values)


def fit_params(
    path: str,
    model_params: Any,
    context_params: Any,
    buffers: DeviceParams,
    extra: ExtraModel | None = None,
) -> FitStatus:
    """Fit both parameter structs in place, as llama-server does before it loads."""
    # Without a device to offload to, llama.cpp's fit only compares the model with the host's
    # total memory, and its measuring loads cost a CPU load some 0.4 s (SmolLM2-135M): a CPU
    # machine loads as it did before --fit.
    if not buffers.gpu.fit or not gpu_devices() or buffers.gpu.devices == ("none",):
        return FitStatus.OFF
    return common_fit(path, model_params, context_params, buffers, extra)


def common_fit(
    path: str,
    model_params: Any,
    context_params: Any,
    buffers: DeviceParams,
    extra: ExtraModel | None = None,
) -> FitStatus:
    """llama.cpp's ``common_fit_params`` on both structs, whatever the devices."""
    library = llama_common()
    if library is None:
        return FitStatus.OFF
    gpu = buffers.gpu
    margins = _margins(gpu.fit_target_mib)
    # llama.cpp narrates its measuring loads on stderr past its log callback.
    with suppress_stdout_stderr(disable=False):
        status = getattr(library, _FIT_SYMBOL)(
            path.encode(),
            ctypes.byref(model_params),
            ctypes.byref(context_params),
            ctypes.addressof(buffers.tensor_split),
            ctypes.addressof(buffers.overrides),
            ctypes.addressof(margins),
            gpu.fit_ctx,
            None if extra is None else ctypes.byref(extra),
            _GGML_LOG_LEVEL_ERROR,
        )
    return FitStatus(status)
