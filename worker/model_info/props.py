"""The single-model ``/props`` body, with llama-server's fields (``server-context.cpp``,
``get_res_props``)."""

from __future__ import annotations

from typing import Any

from worker.generation_settings import generation_settings
from worker.model import LoadedModel
from worker.sampling import SamplingParams

__all__ = ["props_body"]

# The marker a /completion prompt puts where multimodal_data goes; upstream's default.
MEDIA_MARKER = "<__media__>"


def props_body(model: LoadedModel) -> dict[str, Any]:
    """Answered from settings and load-time facts only, so it never wakes a sleeping model."""
    settings = model.settings
    defaults = SamplingParams(temperature=settings.temperature, seed=settings.seed)
    return {
        "default_generation_settings": {
            "params": generation_settings(
                defaults, n_predict=settings.n_predict, n_keep=settings.keep
            ),
            "n_ctx": model.batcher.n_ctx_seq,
        },
        "total_slots": settings.parallel,
        "model_alias": settings.alias,
        "model_path": str(settings.model),
        "modalities": {"vision": False, "video": False, "audio": False},
        "media_marker": MEDIA_MARKER,
        "endpoint_slots": settings.slots,
        "endpoint_props": False,
        "endpoint_metrics": settings.metrics,
        "ui": False,
        "ui_settings": {},
        "chat_template": model.template.source,
        "chat_template_caps": {},
        "bos_token": model.bos_text,
        "eos_token": model.eos_text,
        "build_info": "corral",
        "is_sleeping": model.sleeping,
        "cors_proxy_enabled": False,
    }
