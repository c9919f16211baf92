"""llama-server's ``--override-kv KEY=TYPE:VALUE``: GGUF metadata replaced as the model loads.

The overrides are checked when the worker starts (:func:`parse_overrides`) and handed to
``llama_model_params.kv_overrides`` as llama.cpp's array, ended by an empty key
(:func:`override_array`), as llama-cpp-python's ``Llama`` builds it.
"""

from __future__ import annotations

import ctypes
from typing import Any

from worker.host.llama_bindings import llama_cpp

__all__ = ["override_array"]

_TAGS = {
    "int": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_INT,
    "float": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_FLOAT,
    "bool": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_BOOL,
    "str": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_STR,
}
_STR_SIZE = 128  # llama_model_kv_override's val_str


def override_array(overrides: tuple[tuple[str, str, str], ...]) -> Any:
    """The ``llama_model_kv_override`` array for (key, type, value) triples already checked by
    :func:`worker.settings.groups.kv_overrides`; keep it alive until the model is loaded."""
    array = (llama_cpp.llama_model_kv_override * (len(overrides) + 1))()
    for item, (key, kind, value) in zip(array, overrides, strict=False):
        item.key = key.encode()
        item.tag = _TAGS[kind]
        if kind == "int":
            item.value.val_i64 = int(value)
        elif kind == "float":
            item.value.val_f64 = float(value)
        elif kind == "bool":
            item.value.val_bool = value == "true"
        else:
            offset: int = llama_cpp.llama_model_kv_override_value.val_str.offset  # type: ignore[attr-defined]  # a ctypes field
            text = value.encode().ljust(_STR_SIZE, b"\0")
            ctypes.memmove(ctypes.addressof(item.value) + offset, text, _STR_SIZE)
    return array
