"""The worker's request defaults from llama-server's flags: ``--grammar``/``--json-schema`` (and
their ``-file`` forms) constrain, ``-r`` stops and ``-l`` biases every request that says nothing
itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from corral.children.protocol import EXIT_FAILED
from tests.support.worker_process import worker
from worker.settings.parse import parse_worker_args

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


def test_every_reverse_prompt_given_stops_an_answer(models_dir: Path) -> None:
    # As llama-server, each -r is kept: the comma stops this answer though ";" was given last.
    grammar = 'root ::= "abc, def; ghi"'
    with worker(models_dir / "alpha.gguf", "--grammar", grammar, "-r", ",", "-r", ";") as child:
        assert _complete(child.url) == "abc"
        settings = httpx.post(
            f"{child.url}/completion", json={"prompt": "x", "n_predict": 1}, timeout=120
        ).json()["generation_settings"]
        assert settings["stop"] == [",", ";"]


_FAVOURED, _OTHER = 300, 400  # two ordinary tokens of the tiny model's 583


def _tokens_text(url: str, *tokens: int) -> str:
    reply = httpx.post(f"{url}/detokenize", json={"tokens": list(tokens)}, timeout=120)
    return str(reply.raise_for_status().json()["content"])


def test_the_logit_bias_flag_biases_requests_that_give_none(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "-l", f"{_FAVOURED}+100") as child:
        n = 4
        assert _complete(child.url, n_predict=n) == _tokens_text(child.url, *[_FAVOURED] * n)
        # A request's own logit_bias replaces the flag's (llama-server clears the list), so
        # the smaller bias it gives wins: merged, the flag's +100 would.
        own = {"logit_bias": {str(_OTHER): 50}, "n_predict": n}
        assert _complete(child.url, **own) == _tokens_text(child.url, *[_OTHER] * n)
        settings = httpx.post(
            f"{child.url}/completion", json={"prompt": "x", "n_predict": 1}, timeout=120
        ).json()["generation_settings"]
        assert settings["logit_bias"] == [{"bias": 100.0, "token": _FAVOURED}]


def test_a_logit_bias_outside_the_vocabulary_fails_the_load(models_dir: Path) -> None:
    # llama.cpp would index the logits with it unchecked.
    command = [sys.executable, "-m", "worker", "--model", str(models_dir / "alpha.gguf")]
    done = subprocess.run(
        [*command, "-l", "99999999+1"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == EXIT_FAILED
    assert "--logit-bias: token id 99999999 is outside the vocabulary (583 tokens)" in done.stderr


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
        ("END",),
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
