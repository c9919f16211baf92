"""The single-model ``/props`` body, with llama-server's fields (``server-context.cpp``,
``get_res_props``)."""

from __future__ import annotations

from typing import Any

from corral.llama_build import corral_version, llama_build_info
from worker.engine.model import LoadedModel
from worker.media.projector import media_marker
from worker.sampling.generation_settings import generation_settings

__all__ = ["props_body"]


def props_body(model: LoadedModel) -> dict[str, Any]:
    """Answered from settings and load-time facts only, so it never wakes a sleeping model."""
    settings = model.settings
    return {
        "default_generation_settings": {
            "params": generation_settings(
                model.sampling, n_predict=settings.n_predict, n_keep=settings.keep
            ),
            "n_ctx": model.batcher.n_ctx_seq,
        },
        "total_slots": settings.parallel,
        "model_alias": settings.alias,
        "model_path": str(settings.model),
        "modalities": {
            "vision": model.modalities.vision,
            "video": False,
            "audio": model.modalities.audio,
        },
        "media_marker": media_marker(),
        "endpoint_slots": settings.endpoint_slots,
        "endpoint_props": False,
        "endpoint_metrics": settings.metrics,
        "ui": False,
        "ui_settings": settings.ui_settings,
        **model.template.props(),
        "build_info": llama_build_info(),
        "corral_version": corral_version(),
        "is_sleeping": model.sleeping,
        "cors_proxy_enabled": False,
    }
