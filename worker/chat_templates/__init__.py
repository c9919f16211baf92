"""Chat templates rendered exactly as llama-server renders them (docs/templates.md)."""

from worker.chat_templates.capabilities import TemplateCaps
from worker.chat_templates.renderer import RenderRequest, TemplateRenderError, VocabTokens
from worker.chat_templates.selection import ChatTemplates, TemplateChoice

__all__ = [
    "ChatTemplates",
    "RenderRequest",
    "TemplateCaps",
    "TemplateChoice",
    "TemplateRenderError",
    "VocabTokens",
]
