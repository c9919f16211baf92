"""Chat formats: reading a model's own tool-call and thinking syntax out of its output.

The package is data (:mod:`families`: each family's syntax; :mod:`detection`: which template
speaks which), two parsers (:mod:`json_calls`, :mod:`xml_calls`), the reasoning split and the
per-request reader (:mod:`output`) that turns output text into a message, whole or streamed.
"""

from worker.chat_formats.detection import ChatFormat, NativeSyntax, detect_format
from worker.chat_formats.message import MessageDelta, ParsedMessage, ToolCall
from worker.chat_formats.output import OutputParser, OutputStream, ToolSyntax
from worker.chat_formats.reasoning import REASONING_FORMATS, ThinkingTags
from worker.chat_formats.scanning import MalformedToolCall
from worker.chat_formats.tool_grammar import ToolGrammar, tool_grammar

__all__ = [
    "REASONING_FORMATS",
    "ChatFormat",
    "MalformedToolCall",
    "MessageDelta",
    "NativeSyntax",
    "OutputParser",
    "OutputStream",
    "ParsedMessage",
    "ThinkingTags",
    "ToolCall",
    "ToolGrammar",
    "ToolSyntax",
    "detect_format",
    "tool_grammar",
]
