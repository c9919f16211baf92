"""The router's HTTP routes, one module per feature; handlers stay thin."""

from router.api.inference import inference_routes
from router.api.models import model_routes
from router.api.streams import stream_routes
from router.api.webui import webui_routes

__all__ = ["inference_routes", "model_routes", "stream_routes", "webui_routes"]
