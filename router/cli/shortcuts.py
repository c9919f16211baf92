"""llama-server's model shortcuts: ``--gpt-oss-20b-default``, ``--fim-qwen-7b-spec``, ….

Each names a hub model and the settings llama-server's common/arg.cpp gives it. Here it adds
that model as ``-hf ORG/REPO:TAG`` (the tag picks the file the shortcut names, so it is fetched
through the same download child as any ``-hf`` model) and sets the port and per-model options,
at its place on the command line as llama-server does: a flag after the shortcut beats it, one
before it is overridden. A setting Corral has no option for (llama-server's ``--cache-reuse``)
is left out.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corral.options.sampling_fields import MIN_P, TEMPERATURE, TOP_K, TOP_P

__all__ = ["SHORTCUTS", "SHORTCUT_DEST", "Shortcut", "add_shortcut_flags"]

SHORTCUT_DEST = "model_shortcut"  # unused: the action writes the flags' own destinations


@dataclass(frozen=True, slots=True)
class Shortcut:
    model: str  # as -hf takes it
    port: int
    options: dict[str, str] = field(default_factory=dict)  # per-model options, canonical names
    summary: str = ""


_FIM = {"ubatch-size": "1024", "batch-size": "1024", "ctx-size": "0"}
_GPT_OSS = {
    "ubatch-size": "2048",
    "batch-size": "32768",
    "parallel": "2",
    "ctx-size": str(131072 * 2),
    TEMPERATURE.option: "1",
    TOP_P.option: "1",
    TOP_K.option: "0",
    MIN_P.option: "0.01",
    "jinja": "true",
}
_QWEN_DRAFT = "ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF:Q8_0"
SHORTCUTS: dict[str, Shortcut] = {
    "--embd-gemma-default": Shortcut(
        "ggml-org/embeddinggemma-300M-qat-q4_0-GGUF:Q4_0",
        8011,
        {
            "ubatch-size": "2048",
            "batch-size": "2048",
            "parallel": "32",
            "ctx-size": str(2048 * 32),
            "embeddings": "true",
        },
        "EmbeddingGemma 300M",
    ),
    "--fim-qwen-1.5b-default": Shortcut(
        "ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF:Q8_0", 8012, _FIM, "Qwen 2.5 Coder 1.5B"
    ),
    "--fim-qwen-3b-default": Shortcut(
        "ggml-org/Qwen2.5-Coder-3B-Q8_0-GGUF:Q8_0", 8012, _FIM, "Qwen 2.5 Coder 3B"
    ),
    "--fim-qwen-7b-default": Shortcut(
        "ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF:Q8_0", 8012, _FIM, "Qwen 2.5 Coder 7B"
    ),
    "--fim-qwen-7b-spec": Shortcut(
        "ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF:Q8_0",
        8012,
        {**_FIM, "spec-draft-hf": _QWEN_DRAFT},
        "Qwen 2.5 Coder 7B, the 0.5B drafting",
    ),
    "--fim-qwen-14b-spec": Shortcut(
        "ggml-org/Qwen2.5-Coder-14B-Q8_0-GGUF:Q8_0",
        8012,
        {**_FIM, "spec-draft-hf": _QWEN_DRAFT},
        "Qwen 2.5 Coder 14B, the 0.5B drafting",
    ),
    "--fim-qwen-30b-default": Shortcut(
        "ggml-org/Qwen3-Coder-30B-A3B-Instruct-Q8_0-GGUF:Q8_0",
        8012,
        _FIM,
        "Qwen 3 Coder 30B A3B Instruct",
    ),
    "--gpt-oss-20b-default": Shortcut(
        "ggml-org/gpt-oss-20b-GGUF:MXFP4", 8013, _GPT_OSS, "gpt-oss-20b"
    ),
    # No file named: the repository's default, as for any -hf without a tag.
    "--gpt-oss-120b-default": Shortcut(
        "ggml-org/gpt-oss-120b-GGUF", 8013, _GPT_OSS, "gpt-oss-120b"
    ),
    "--vision-gemma-4b-default": Shortcut(
        "ggml-org/gemma-3-4b-it-qat-GGUF",
        8014,
        {"ctx-size": "0", "jinja": "true"},
        "Gemma 3 4B QAT",
    ),
    "--vision-gemma-12b-default": Shortcut(
        "ggml-org/gemma-3-12b-it-qat-GGUF",
        8014,
        {"ctx-size": "0", "jinja": "true"},
        "Gemma 3 12B QAT",
    ),
}


class _UseShortcut(argparse.Action):
    """Adds the shortcut's model and sets its port and options in the namespace, now."""

    def __init__(self, *args: Any, models: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.models = models  # the -hf row's dest: the models to load at startup

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        shortcut = SHORTCUTS[self.option_strings[0]]
        setattr(namespace, self.models, [*(getattr(namespace, self.models) or []), shortcut.model])
        namespace.port = shortcut.port
        for name, value in shortcut.options.items():
            dest = "opt_" + name.replace("-", "_")  # corral.options.flags' destinations
            if hasattr(namespace, dest):  # an option this parser has
                setattr(namespace, dest, value)


def add_shortcut_flags(parser: argparse.ArgumentParser, models: str) -> None:
    group = parser.add_argument_group(
        "model shortcuts (llama-server's)",
        "serve this hub model (downloaded first, unless cached) with llama-server's settings "
        "for it; flags after the shortcut beat them",
    )
    for flag, shortcut in SHORTCUTS.items():
        group.add_argument(
            flag,
            dest=SHORTCUT_DEST,
            nargs=0,
            action=_UseShortcut,
            help=shortcut.summary,
            models=models,
        )
