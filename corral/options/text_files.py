"""Options given as text or as a file of it: ``--grammar``/``--grammar-file``, ``--json-schema``/
``--json-schema-file``, ``--ui-config``/``--ui-config-file`` (llama-server's pairs)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corral.options.values import OptionError

__all__ = ["json_object", "text_or_file"]


def text_or_file(options: Mapping[str, str], name: str) -> str | None:
    """``NAME``'s text, or the text of the file ``NAME-file`` names; both at once is an error."""
    text, path = options.get(name), options.get(f"{name}-file")
    if text is not None and path is not None:
        raise OptionError(f"give --{name} or --{name}-file, not both")
    if path is None:
        return text
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise OptionError(f"--{name}-file: cannot read {path}: {exc.strerror}") from None


def json_object(text: str, name: str) -> dict[str, Any]:
    """``text`` as a JSON object; anything else is an error naming ``--NAME``."""
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise OptionError(f"--{name}: not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise OptionError(f"--{name}: must be a JSON object")
    return parsed
