"""The families whose whole answer has a shape of its own, one module each: each implements
:class:`~worker.chat.formats.syntax.NativeSyntax` itself, where the JSON and XML families are
data for the two generic syntaxes (docs/tool-calls.md, "Adding a family"). Harmony and Muse,
whose answers are both framed messages, share their reading loop (``framed``)."""
