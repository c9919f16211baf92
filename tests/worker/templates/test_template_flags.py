"""The template flags of ``python -m worker`` as WorkerSettings."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.worker_process import worker
from worker.settings.parse import parse_worker_args


def test_defaults_are_llama_server_s() -> None:
    settings = parse_worker_args(["--model", "m.gguf"])
    assert (settings.jinja, settings.chat_template, settings.chat_template_kwargs) == (
        True,
        None,
        {},
    )


def test_the_template_file_is_read_and_kwargs_parsed(tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages[0].content }}")
    argv = ["--model", "m.gguf", "--no-jinja", "--chat-template-file", str(template),
            "--chat-template-kwargs", '{"enable_thinking": false}']  # fmt: skip
    settings = parse_worker_args(argv)
    assert settings.chat_template == "{{ messages[0].content }}"
    assert settings.chat_template_kwargs == {"enable_thinking": False}
    assert settings.jinja is False


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--chat-template-file", "/nonexistent/t.jinja", "cannot read"),
        ("--chat-template-kwargs", "{not json", "not JSON"),
        ("--chat-template-kwargs", "[1]", "JSON object"),
    ],
)
def test_bad_template_flags_stop_the_worker_with_a_message(
    flag: str, value: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_worker_args(["--model", "m.gguf", flag, value])
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_reasoning_effort_is_the_templates_variable_unless_the_kwargs_say() -> None:
    def kwargs(*argv: str) -> dict[str, object]:
        return parse_worker_args(["--model", "m.gguf", *argv]).chat_template_kwargs

    assert kwargs("--reasoning-effort", "high") == {"reasoning_effort": "high"}
    assert kwargs("--reasoning-effort", "default") == {}
    low = '{"reasoning_effort": "low"}'
    assert kwargs("--reasoning-effort", "high", "--chat-template-kwargs", low) == {
        "reasoning_effort": "low"
    }


def test_the_template_renders_with_the_reasoning_effort(models_dir: Path) -> None:
    template = "{{ reasoning_effort | default('unset') }}|{{ messages[0].content }}"
    flags = ("--chat-template", template, "--reasoning-effort", "high")
    with worker(models_dir / "alpha.gguf", *flags) as child:
        body = {"messages": [{"role": "user", "content": "hi"}]}
        rendered = httpx.post(f"{child.url}/apply-template", json=body).json()["prompt"]
    assert rendered == "high|hi"


@pytest.mark.parametrize(
    ("flags", "preserved"),
    # On by default, as llama-server's.
    [((), "True"), (("--reasoning-preserve",), "True"), (("--no-reasoning-preserve",), "False")],
)
def test_reasoning_preserve_sets_the_templates_variables(
    models_dir: Path, flags: tuple[str, ...], preserved: str
) -> None:
    template = "{{ preserve_thinking | default('unset') }}|{{ messages[0].content }}"
    with worker(models_dir / "alpha.gguf", "--chat-template", template, *flags) as child:
        body = {"messages": [{"role": "user", "content": "hi"}]}
        rendered = httpx.post(f"{child.url}/apply-template", json=body).json()["prompt"]
    assert rendered == f"{preserved}|hi"
