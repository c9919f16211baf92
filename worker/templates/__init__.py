"""Chat templates rendered exactly as llama-server renders them (docs/templates.md)."""

from worker.templates.capabilities import TemplateCaps
from worker.templates.renderer import RenderRequest, TemplateRenderError, VocabTokens
from worker.templates.selection import ChatTemplates, TemplateChoice

__all__ = [
    "ChatTemplates",
    "RenderRequest",
    "TemplateCaps",
    "TemplateChoice",
    "TemplateRenderError",
    "VocabTokens",
]
