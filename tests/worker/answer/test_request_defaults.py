"""The worker's request defaults from llama-server's flags: ``--grammar``/``--json-schema`` (and
their ``-file`` forms) constrain, and ``-r`` stops, every request that says nothing itself."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.support.worker_process import worker
from worker.settings import parse_worker_args

CHAT = [{"role": "user", "content": "Say something."}]


def _complete(url: str, **fields: object) -> str:
    body = {"prompt": "Answer:", "n_predict": 24, "temperature": 0, **fields}
    reply = httpx.post(f"{url}/completion", json=body, timeout=120).raise_for_status()
    return str(reply.json()["content"])


def test_the_grammar_and_reverse_prompt_are_defaults_a_request_overrides(
    models_dir: Path,
) -> None:
    with worker(models_dir / "alpha.gguf", "--grammar", 'root ::= "abc, def"', "-r", ",") as child:
        assert _complete(child.url) == "abc"  # constrained, then stopped at the comma
        assert _complete(child.url, stop=[" d"]) == "abc,"  # its own stop strings instead
        assert _complete(child.url, grammar='root ::= "xyz"') == "xyz"  # its own grammar
        body = {"messages": CHAT, "max_tokens": 24, "temperature": 0}
        chat = httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=120).json()
        assert chat["choices"][0]["message"]["content"] == "abc"
        # /completion's generation_settings say what ran.
        settings = httpx.post(
            f"{child.url}/completion", json={"prompt": "x", "n_predict": 2}, timeout=120
        ).json()["generation_settings"]
        assert settings["stop"] == [","]


def test_a_json_schema_file_constrains_every_answer(models_dir: Path, tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "string", "enum": ["yes", "no"]}))
    with worker(models_dir / "alpha.gguf", "-jf", str(schema)) as child:
        assert json.loads(_complete(child.url)) in ("yes", "no")
        # A request's own schema replaces it.
        fmt = {"type": "json_schema", "json_schema": {"schema": {"enum": ["maybe"]}}}
        body = {"messages": CHAT, "max_tokens": 24, "response_format": fmt}
        chat = httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=120).json()
        assert chat["choices"][0]["message"]["content"] == '"maybe"'


def test_grammar_and_schema_files_are_read_when_the_worker_starts(tmp_path: Path) -> None:
    grammar = tmp_path / "g.gbnf"
    grammar.write_text('root ::= "a"')
    settings = parse_worker_args(["-m", "m.gguf", "--grammar-file", str(grammar), "-r", "END"])
    assert (settings.grammar, settings.json_schema, settings.reverse_prompt) == (
        'root ::= "a"',
        None,
        "END",
    )
    assert parse_worker_args(["-m", "m.gguf", "-j", '{"type": "object"}']).json_schema == (
        '{"type": "object"}'
    )


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--grammar", "root ::= x", "-j", "{}"], "not both"),
        (["--grammar", "root ::= x", "--grammar-file", "g"], "not both"),
        (["-j", "{not json"], "--json-schema: not JSON"),
        (["-j", "[1]"], "must be a JSON object"),
        (["-jf", "/nonexistent/schema.json"], "--json-schema-file: cannot read"),
    ],
)
def test_a_bad_grammar_or_schema_is_refused_at_startup(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_worker_args(["-m", "m.gguf", *argv])
    assert error in capsys.readouterr().err


def _prompt_read(url: str, **fields: object) -> int:
    body = {"prompt": "Once upon a time there was a", "n_predict": 2, "temperature": 0, **fields}
    reply = httpx.post(f"{url}/completion", json=body, timeout=120).raise_for_status().json()
    return int(reply["timings"]["prompt_n"])


@pytest.mark.parametrize(("flags", "reused"), [((), True), (("--no-cache-prompt",), False)])
def test_cache_prompt_is_the_default_of_requests_that_do_not_say(
    models_dir: Path, flags: tuple[str, ...], reused: bool
) -> None:
    with worker(models_dir / "alpha.gguf", "--parallel", "1", *flags) as child:
        first = _prompt_read(child.url)
        again = _prompt_read(child.url)
        assert (again < first) is reused
        # A request's own cache_prompt beats the flag.
        _prompt_read(child.url, cache_prompt=True)
        assert (_prompt_read(child.url, cache_prompt=True) < first) is True
