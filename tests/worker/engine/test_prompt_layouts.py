"""llama-server's fill-in-the-middle layouts (worker/engine/prompt_layouts.py), read off a real
model's vocabulary: Prefix/Suffix/Middle by default, Suffix/Prefix/Middle with ``--spm-infill``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from worker.engine.model import LoadedModel
from worker.host.llama_bindings import llama_cpp
from worker.settings.parse import parse_worker_args


@pytest.mark.parametrize(("flags", "order"), [((), "PSM"), (("--spm-infill",), "SPM")])
def test_the_fim_layout_follows_spm_infill(
    tmp_path: Path, flags: tuple[str, ...], order: str
) -> None:
    coder = write_tiny_gguf(tmp_path / "coder.gguf", name="coder", fim=True)
    settings = parse_worker_args(["--model", str(coder), "--no-kv-persist", *flags])
    model = LoadedModel(settings, lambda value: None)
    try:
        vocab = model.vocab
        marks = {
            llama_cpp.llama_vocab_fim_pre(vocab): "P",
            llama_cpp.llama_vocab_fim_suf(vocab): "S",
            llama_cpp.llama_vocab_fim_mid(vocab): "M",
        }
        tokens = model.infill_prompt("def f():", "return 1", "", [])
        assert "".join(marks[t] for t in tokens if t in marks) == order
        suffix = model.tokenize("return 1", add_special=False, parse_special=False)
        after_suffix_mark = tokens.index(llama_cpp.llama_vocab_fim_suf(vocab)) + 1
        assert tokens[after_suffix_mark : after_suffix_mark + len(suffix)] == suffix
        assert tokens[-1] == llama_cpp.llama_vocab_fim_mid(vocab)
    finally:
        model.close()
