"""ggml's backend registry and logger through the library llama-cpp-python loaded (ctypes).

llama-cpp-python binds llama.h, not ggml.h, ggml-backend.h or ggml-rpc.h; these few functions
resolve on its ``libllama`` handle, whose dependencies (``libggml``, and ``libggml-rpc`` in a
build with ``GGML_RPC=ON``) are searched too. The RPC functions are reached as llama-server
reaches them (common/arg.cpp ``add_rpc_devices``): the "RPC" registry's ``get_proc_address``.
"""

from __future__ import annotations

import ctypes
from typing import Any

from worker.host.llama_bindings import llama_cpp

__all__ = [
    "DEVICE_TYPE_ACCEL",
    "DEVICE_TYPE_CPU",
    "RpcBackendMissing",
    "add_server",
    "buffer_type_name",
    "cpu_buffer_type",
    "device_buffer_type",
    "device_by_name",
    "device_description",
    "device_memory",
    "device_name",
    "device_type",
    "devices",
    "ggml_logger",
    "register",
    "registry_devices",
    "set_ggml_logger",
    "start_server_function",
]

# enum ggml_backend_dev_type (ggml-backend.h)
DEVICE_TYPE_CPU = 0
DEVICE_TYPE_ACCEL = 3

_lib: Any = llama_cpp._lib
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "ggml_backend_reg_by_name": (ctypes.c_void_p, [ctypes.c_char_p]),
    "ggml_backend_reg_get_proc_address": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]),
    "ggml_backend_register": (None, [ctypes.c_void_p]),
    "ggml_backend_reg_dev_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "ggml_backend_reg_dev_get": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t]),
    "ggml_backend_dev_count": (ctypes.c_size_t, []),
    "ggml_backend_dev_get": (ctypes.c_void_p, [ctypes.c_size_t]),
    "ggml_backend_dev_name": (ctypes.c_char_p, [ctypes.c_void_p]),
    "ggml_backend_dev_type": (ctypes.c_int, [ctypes.c_void_p]),
    "ggml_backend_dev_description": (ctypes.c_char_p, [ctypes.c_void_p]),
    "ggml_backend_dev_memory": (
        None,
        [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)],
    ),
    "ggml_backend_dev_by_name": (ctypes.c_void_p, [ctypes.c_char_p]),
    "ggml_backend_dev_buffer_type": (ctypes.c_void_p, [ctypes.c_void_p]),
    "ggml_backend_buft_name": (ctypes.c_char_p, [ctypes.c_void_p]),
    "ggml_backend_cpu_buffer_type": (ctypes.c_void_p, []),
    "ggml_log_get": (
        None,
        [ctypes.POINTER(llama_cpp.llama_log_callback), ctypes.POINTER(ctypes.c_void_p)],
    ),
    "ggml_log_set": (None, [llama_cpp.llama_log_callback, ctypes.c_void_p]),
}
for _name, (_result, _arguments) in _SIGNATURES.items():
    getattr(_lib, _name).restype = _result
    getattr(_lib, _name).argtypes = _arguments

# ggml-rpc.h: ggml_backend_reg_t ggml_backend_rpc_add_server(const char * endpoint)
_AddServer = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)
# ggml-rpc.h: void ggml_backend_rpc_start_server(const char * endpoint, const char * cache_dir,
#     size_t n_threads, size_t n_devices, ggml_backend_dev_t * devices)
StartServer = ctypes.CFUNCTYPE(
    None,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_size_t,
    ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_void_p),
)


class RpcBackendMissing(RuntimeError):
    """This llama.cpp was built without ``GGML_RPC=ON``."""


def _rpc_function(name: str) -> int:
    registry = _lib.ggml_backend_reg_by_name(b"RPC")
    if not registry:
        raise RpcBackendMissing(
            "this llama-cpp-python was built without the RPC backend (GGML_RPC=ON); "
            "rebuild it with scripts/bootstrap.py"
        )
    address: int | None = _lib.ggml_backend_reg_get_proc_address(registry, name.encode())
    if not address:
        raise RpcBackendMissing(f"the RPC backend has no {name}")
    return address


def add_server(endpoint: str) -> int | None:
    """The registry of one RPC server's devices (it connects and asks the server); None when
    the server has none. A server that cannot be reached aborts the process (ggml-rpc.cpp
    ``GGML_ABORT``): check it first (:mod:`worker.rpc.handshake`)."""
    function = _AddServer(_rpc_function("ggml_backend_rpc_add_server"))
    registry: int | None = function(endpoint.encode())
    return registry


def register(registry: int) -> None:
    """Make a registry's devices available to every later model load (as llama-server does)."""
    _lib.ggml_backend_register(registry)


def registry_devices(registry: int) -> list[int]:
    return [
        _lib.ggml_backend_reg_dev_get(registry, index)
        for index in range(_lib.ggml_backend_reg_dev_count(registry))
    ]


def devices() -> list[tuple[int, int]]:
    """Every registered device and its type."""
    found = []
    for index in range(_lib.ggml_backend_dev_count()):
        device = _lib.ggml_backend_dev_get(index)
        found.append((device, int(_lib.ggml_backend_dev_type(device))))
    return found


def device_name(device: int) -> str:
    name: bytes = _lib.ggml_backend_dev_name(device)
    return name.decode()


def device_description(device: int) -> str:
    text: bytes = _lib.ggml_backend_dev_description(device)
    return text.decode(errors="replace")


def device_memory(device: int) -> tuple[int, int]:
    """(free, total) bytes, as the device reports them now."""
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    _lib.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
    return free.value, total.value


def device_by_name(name: str) -> int:
    """The registered device called ``name`` (``CPU``, ``CUDA0``, …, any case, as llama-server's
    ``--device`` names them); ``ValueError`` naming the ones there are."""
    device: int | None = _lib.ggml_backend_dev_by_name(name.encode())
    if not device:
        names = ", ".join(device_name(d) for d, _ in devices()) or "none"
        raise ValueError(f"no device '{name}' (devices: {names})")
    return device


def device_type(device: int) -> int:
    return int(_lib.ggml_backend_dev_type(device))


def device_buffer_type(device: int) -> int | None:
    buft: int | None = _lib.ggml_backend_dev_buffer_type(device)
    return buft


def buffer_type_name(buft: int) -> str:
    name: bytes = _lib.ggml_backend_buft_name(buft)
    return name.decode()


def cpu_buffer_type() -> int:
    buft: int = _lib.ggml_backend_cpu_buffer_type()
    return buft


def start_server_function() -> Any:
    """``ggml_backend_rpc_start_server``, callable (see :data:`StartServer`)."""
    return StartServer(_rpc_function("ggml_backend_rpc_start_server"))


def ggml_logger() -> tuple[Any, ctypes.c_void_p]:
    """ggml's log callback and its user data (llama.cpp's ``llama_log_get`` reads only
    llama's, while ``llama_log_set`` sets both)."""
    callback = llama_cpp.llama_log_callback()
    user_data = ctypes.c_void_p()
    _lib.ggml_log_get(ctypes.byref(callback), ctypes.byref(user_data))
    return callback, user_data


def set_ggml_logger(callback: Any, user_data: ctypes.c_void_p) -> None:
    _lib.ggml_log_set(callback, user_data)
