"""The part of Go's text/template that a generate request's ``template`` uses: ``{{ .System }}``,
``{{ .Prompt }}``, ``{{ .Response }}`` and ``{{ if .X }}…{{ else }}…{{ end }}`` on them, with
``{{-``/``-}}`` trimming. Corral renders the model's own Jinja template otherwise; a template
beyond this subset (ranges over messages, functions) is a 400 saying so.
"""

from __future__ import annotations

import re

from corral.http.errors import ApiError

__all__ = ["render_go_template"]

_ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.DOTALL)
_FIELDS = (".System", ".Prompt", ".Response")


def render_go_template(template: str, system: str, prompt: str) -> str:
    values = {".System": system, ".Prompt": prompt, ".Response": ""}
    out: list[str] = []
    # One frame per open {{ if }}: whether its branch now being read is the one shown.
    shown: list[bool] = []
    taken: list[bool] = []
    position = 0
    for match in _ACTION.finditer(template):
        trim_left, action, trim_right = match.groups()
        literal = template[position : match.start()]
        if all(shown):
            out.append(literal.rstrip() if trim_left else literal)
        position = match.end()
        if trim_right:
            position += len(template[position:]) - len(template[position:].lstrip())
        words = action.split()
        if len(words) == 1 and words[0] in _FIELDS:
            if all(shown):
                out.append(values[words[0]])
        elif len(words) == 2 and words[0] == "if" and words[1] in _FIELDS:
            shown.append(bool(values[words[1]]))
            taken.append(shown[-1])
        elif words == ["else"] and shown:
            shown[-1] = not taken[-1]
            taken[-1] = True
        elif words == ["end"] and shown:
            shown.pop()
            taken.pop()
        else:
            raise ApiError(
                400,
                f"template: {{{{ {action} }}}} is not supported (only .System, .Prompt, "
                ".Response and if/else/end on them)",
            )
    if shown:
        raise ApiError(400, "template: an {{ if }} has no {{ end }}")
    out.append(template[position:])
    return "".join(out)
