"""Chat formats: reading a model's own tool-call and thinking syntax out of its output.

Every family's syntax implements one protocol (:mod:`syntax`: parse, grammar, what it learns
from the request's tools, its own reasoning split). The package is data (:mod:`families`: the
JSON and XML families; :mod:`detection`: which template speaks which), the two generic syntaxes
those are made of (:mod:`json_calls`, :mod:`xml_calls`, with the section grammar they share in
:mod:`tool_grammar`), the families with a shape of their own, each one module in :mod:`own_shape`
(``harmony``, ``muse``, ``recipients``, ``gemma4``, ``pythonic``, ``python_tag``), the
reasoning split and the per-request reader (:mod:`output`) that turns output text into a
message, whole or streamed (docs/tool-calls.md).
"""

from worker.chat.formats.detection import ChatFormat, detect_format
from worker.chat.formats.gbnf import ToolGrammar
from worker.chat.formats.message import MessageDelta, ParsedMessage, ToolCall
from worker.chat.formats.output import OutputParser, OutputStream, ToolSyntax
from worker.chat.formats.reasoning import REASONING_FORMATS, ThinkingTags
from worker.chat.formats.scanning import MalformedToolCall
from worker.chat.formats.syntax import NativeSyntax

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
]
