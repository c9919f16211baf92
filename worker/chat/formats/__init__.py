"""Chat formats: reading a model's own tool-call and thinking syntax out of its output.

The package is data (:mod:`families`: each family's syntax; :mod:`detection`: which template
speaks which), two general parsers (:mod:`json_calls`, :mod:`xml_calls`), the families with a
shape of their own (:mod:`harmony`, :mod:`muse`, :mod:`recipients`, :mod:`gemma4`,
:mod:`pythonic`, :mod:`python_tag`), their grammars (:mod:`tool_grammar`,
:mod:`family_grammars`), the reasoning split and the per-request reader (:mod:`output`) that
turns output text into a message, whole or streamed.
"""

from worker.chat.formats.detection import ChatFormat, NativeSyntax, detect_format
from worker.chat.formats.message import MessageDelta, ParsedMessage, ToolCall
from worker.chat.formats.output import OutputParser, OutputStream, ToolSyntax
from worker.chat.formats.reasoning import REASONING_FORMATS, ThinkingTags
from worker.chat.formats.scanning import MalformedToolCall
from worker.chat.formats.tool_grammar import ToolGrammar, tool_grammar

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
