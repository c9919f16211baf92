"""llama-server's recorded answers for llama.cpp's chat templates (tests/worker/template_goldens).

Recorded by scripts/record_template_goldens.py; each case is one template asked one
conversation, with llama-server's prompt or its refusal.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["GOLDENS", "GoldenCase", "golden_cases", "golden_template", "recorded_at"]

GOLDENS = Path(__file__).resolve().parent.parent / "worker" / "template_goldens"


@dataclass(frozen=True, slots=True)
class GoldenCase:
    template: str  # the golden file's stem, e.g. "Qwen-Qwen2.5-7B-Instruct"
    conversation: str  # user, dialogue, tools, tool_result, no_thinking
    body: dict[str, Any]  # the request llama-server was sent
    prompt: str | None  # None: llama-server refused it

    @property
    def id(self) -> str:
        return f"{self.template}:{self.conversation}"


@cache
def _manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((GOLDENS / "manifest.json").read_text())
    return manifest


@cache
def golden_template(stem: str) -> dict[str, Any]:
    """One template's golden file: ``source``, ``caps`` and ``cases``."""
    golden: dict[str, Any] = json.loads((GOLDENS / f"{stem}.json").read_text())
    return golden


def recorded_at() -> datetime.datetime:
    """When the goldens were recorded: the date templates printed."""
    return datetime.datetime.fromisoformat(_manifest()["recorded_at"])


def golden_cases() -> list[GoldenCase]:
    conversations = _manifest()["conversations"]
    cases = []
    for path in sorted(GOLDENS.glob("*.json")):
        if path.name == "manifest.json":
            continue
        for name, answer in golden_template(path.stem)["cases"].items():
            cases.append(GoldenCase(path.stem, name, conversations[name], answer.get("prompt")))
    return cases
