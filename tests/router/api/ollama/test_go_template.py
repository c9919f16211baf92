"""The subset of Go templates a generate request's ``template`` may use."""

from __future__ import annotations

import pytest

from corral.http.errors import ApiError
from router.api.ollama.go_template import render_go_template

_LLAMA2 = "[INST] {{ if .System }}<<SYS>>{{ .System }}<</SYS>> {{ end }}{{ .Prompt }} [/INST]"


def test_fields_and_if_blocks_render() -> None:
    assert (
        render_go_template(_LLAMA2, "Be brief.", "Hi")
        == "[INST] <<SYS>>Be brief.<</SYS>> Hi [/INST]"
    )
    assert render_go_template(_LLAMA2, "", "Hi") == "[INST] Hi [/INST]"


def test_else_and_trimming() -> None:
    template = "{{ if .System }}S{{ else }}none{{ end }} \n {{- .Prompt -}} \n!"
    assert render_go_template(template, "", "P") == "noneP!"
    assert render_go_template(template, "x", "P") == "SP!"


@pytest.mark.parametrize("template", ["{{ range .Messages }}x{{ end }}", "{{ if .System }}open"])
def test_anything_beyond_the_subset_is_a_400(template: str) -> None:
    with pytest.raises(ApiError) as caught:
        render_go_template(template, "", "P")
    assert caught.value.status == 400
