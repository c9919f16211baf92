"""Record llama-server's answers for one request per sampling option (docs/api.md, Sampling).

Start a real ``llama-server`` on the tiny test GGUF (tests/support/files/tiny_gguf.py, ``alpha``:
random weights, so every sampler visibly changes the text) and send it, for each option of its
``/completion`` documentation and a few combinations, the same prompt with a fixed seed, 32
tokens and ``cache_prompt: false``; then some through ``/v1/chat/completions``, and bodies with
bad values. The bodies and llama-server's answers go to
``tests/worker/sampling_goldens/llama_server.json``; tests/worker/sampling/ sends the same
bodies to Corral and compares.

    .venv/bin/python scripts/record_sampling_goldens.py \
        --llama-server /work/llama-build/bin/llama-server
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The recording helpers of the chat-template goldens, which came first.
from scripts.record_template_goldens import free_port, request_json  # noqa: E402
from tests.support.files.tiny_gguf import write_tiny_gguf  # noqa: E402

# What llama-server and the worker under test both run with (the worker tests' context size).
SERVER_FLAGS = ["-c", "256"]
_PLAIN = {"prompt": "Once upon a time", "seed": 1234, "n_predict": 32, "cache_prompt": False}
# At temperature 1 the tiny model's distribution is wide enough for every sampler to matter.
_BASE = {**_PLAIN, "temperature": 1.0}
_LINES = 'root ::= "if x:\\n    y = 1\\n    z = 2\\nw = 3\\n    v"'
# One configuration per sampling option of tools/server/README.md's /completion, then mixes.
COMPLETIONS: dict[str, dict[str, Any]] = {
    "defaults": {"temperature": None},  # null: the server's default, as absent
    "greedy": {"temperature": 0},
    "hot": {"temperature": 1.5},
    "dynatemp": {"dynatemp_range": 0.5, "dynatemp_exponent": 2.0},
    "top_k": {"top_k": 3},
    "top_p": {"top_p": 0.3},
    "min_p": {"min_p": 0.5},
    "typical_p": {"typical_p": 0.5},
    "top_n_sigma": {"top_n_sigma": 0.5},
    "xtc": {"xtc_probability": 0.9, "xtc_threshold": 0.01},
    "repeat_penalty": {"repeat_penalty": 1.8, "repeat_last_n": 16},
    "presence_penalty": {"presence_penalty": 1.5},
    "frequency_penalty": {"frequency_penalty": 1.5},
    "dry": {
        "dry_multiplier": 2.0,
        "dry_base": 1.5,
        "dry_allowed_length": 1,
        "dry_penalty_last_n": 64,
    },
    "dry_breakers": {
        "dry_multiplier": 2.0,
        "dry_allowed_length": 1,
        "dry_sequence_breakers": ["e"],
    },
    "mirostat_1": {"mirostat": 1, "mirostat_tau": 3.0, "mirostat_eta": 0.2},
    "mirostat_2": {"mirostat": 2, "mirostat_tau": 3.0, "mirostat_eta": 0.2},
    "mirostat_3_clamped": {"mirostat": 3},
    "min_keep": {"top_p": 0.01, "min_keep": 4},
    "samplers_names": {"samplers": ["top_k", "temperature"], "top_k": 5},
    "samplers_chars": {"samplers": "kt", "top_k": 5},
    "samplers_unknown_name": {"samplers": ["top_k", "no_such_sampler", "temp"], "top_k": 5},
    "adaptive_p": {"samplers": ["top_k", "adaptive_p"], "adaptive_target": 0.3},
    "logit_bias": {"logit_bias": [[" the", -100], [" of", False]]},
    "ignore_eos": {"ignore_eos": True},
    "grammar": {"grammar": 'root ::= ("the" | " world" | " hello")+'},
    "json_schema": {"json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
    "json_schema_bounds": {
        "json_schema": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 3, "maximum": 250},
                "w": {"type": "string", "maxLength": 4},
                "e": {"enum": ["x", 2]},
            },
            "required": ["n", "w", "e"],
        }
    },
    "json_schema_empty": {"json_schema": {}},
    "top_p_clamped": {"top_p": 7},
    "penalties_dry_xtc": {
        "repeat_penalty": 1.3,
        "frequency_penalty": 0.5,
        "presence_penalty": 0.5,
        "dry_multiplier": 1.0,
        "xtc_probability": 0.5,
        "xtc_threshold": 0.05,
    },
    "cut_and_heat": {"top_k": 20, "top_p": 0.8, "min_p": 0.1, "temperature": 1.3},
    "other_seed": {"seed": 42, "temperature": 1.2},
    "t_max_predict_ms_far": {"t_max_predict_ms": 600000},  # never reached: no effect
    # A grammar writes lines; the first one indented less than n_indent ends the answer.
    "n_indent": {"grammar": _LINES, "n_indent": 4},
    "n_indent_one": {"grammar": _LINES, "n_indent": 1},
}
_CHAT_BASE = {
    "messages": [{"role": "user", "content": "Tell me a story."}],
    "seed": 1234,
    "max_tokens": 32,
    "cache_prompt": False,
    "temperature": 1.0,
}
CHATS: dict[str, dict[str, Any]] = {
    "defaults": {"temperature": None},
    "repeat_penalty": {"repeat_penalty": 1.8},
    "dry": {"dry_multiplier": 2.0, "dry_allowed_length": 1},
    "mirostat_2": {"mirostat": 2},
    "presence_frequency": {"presence_penalty": 1.0, "frequency_penalty": 1.0, "top_p": 0.5},
}
# n_probs: the model's distribution, or (post_sampling_probs) the candidates the chain drew from.
PROBS: dict[str, dict[str, Any]] = {
    "pre_sampling": {"n_probs": 5, "n_predict": 6},
    "post_sampling": {"n_probs": 5, "n_predict": 6, "post_sampling_probs": True},
    "post_sampling_penalties": {
        "n_probs": 8,
        "n_predict": 6,
        "post_sampling_probs": True,
        "repeat_penalty": 1.5,
        "top_k": 6,
        "dry_multiplier": 1.0,
    },
}
# Server-wide defaults (flags a preset can set too): requests that name nothing get them, one
# that names a field overrides it.
DEFAULT_FLAGS = ["--temp", "0.2", "--top-k", "5", "--repeat-penalty", "1.3", "--dry-multiplier",
                 "1.0", "--samplers", "penalties;dry;top_k;temperature"]  # fmt: skip
SERVER_DEFAULT_CASES: dict[str, dict[str, Any]] = {
    "server_defaults": {},
    "request_overrides": {"temperature": 1.5, "top_k": 40, "samplers": "kt"},
}
# Sampling defaults a model file carries (llama.cpp's common_init_sampler_from_model): they count
# where no flag was given.
MODEL_SAMPLING = {
    "general.sampling.top_k": "3",
    "general.sampling.temp": "1.3",
    "general.sampling.penalty_repeat": "1.4",
    "general.sampling.sequence": "penalties;top_k;temperature",
}
MODEL_FLAGS: dict[str, list[str]] = {"file_only": [], "flag_wins": ["--top-k", "7"]}
# The same sampling through OpenAI's Responses API. (llama-server's Anthropic Messages route
# passes on only temperature, top_p and top_k, not the seed: its text cannot be recorded.)
RESPONSES: dict[str, dict[str, Any]] = {
    "mirostat": {
        "input": "Tell me a story.",
        "max_output_tokens": 32,
        "seed": 1234,
        "temperature": 1.0,
        "mirostat": 2,
        "cache_prompt": False,
    },
}
# Bodies llama-server refuses or reads its own way: Corral must answer as it does.
BAD: dict[str, dict[str, Any]] = {
    "repeat_last_n_negative": {"repeat_last_n": -1},
    "dry_allowed_length_negative": {"dry_allowed_length": -2},
    "min_keep_negative": {"min_keep": -1},
    "adaptive_decay_too_high": {"adaptive_decay": 1.5},
    "repeat_penalty_zero": {"repeat_penalty": 0},
    "top_k_string": {"top_k": "forty"},
    "temperature_string": {"temperature": "hot"},
    "dry_breakers_empty": {"dry_sequence_breakers": []},
    "dry_breakers_string": {"dry_sequence_breakers": "abc"},
    "samplers_numbers": {"samplers": [1, 2]},
    "top_k_boolean": {"top_k": True},
    "n_indent_negative": {"n_indent": -1},
    "t_max_predict_ms_below": {"t_max_predict_ms": -2},
    "mirostat_string": {"mirostat": "2"},
    "json_schema_not_an_object": {"json_schema": "not an object"},
    "json_schema_unknown_type": {"json_schema": {"type": "bogus"}},
    "json_schema_bad_pattern": {"json_schema": {"type": "string", "pattern": "^(ab$"}},
    # Read their own way, not refused: another type is ignored, a fraction truncated.
    "samplers_number": {"samplers": 5},
    "repeat_last_n_fraction": {"repeat_last_n": 16.7, "repeat_penalty": 1.8},
}


@contextlib.contextmanager
def _llama_server(server: pathlib.Path, model: pathlib.Path, flags: list[str]) -> Iterator[str]:
    port = free_port()
    argv = [str(server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            *flags, "--no-warmup"]  # fmt: skip
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            base = f"http://127.0.0.1:{port}"
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/health", timeout=5):
                        break
                except OSError:
                    time.sleep(0.1)  # a one-off recording script polling a starting server
            yield base
        finally:
            process.terminate()
            process.wait(30)


def _completions(
    base: str, cases: dict[str, dict[str, Any]], common: dict[str, Any]
) -> dict[str, Any]:
    recorded = {}
    for name, fields in cases.items():
        body = {**common, **fields}
        status, answer = request_json(f"{base}/completion", body, timeout=120)
        assert status == 200, (name, answer)
        recorded[name] = {
            "body": body,
            "content": answer["content"],
            "settings": answer["generation_settings"],
        }
    return recorded


def _record(server: pathlib.Path, model: pathlib.Path) -> dict[str, Any]:
    with _llama_server(server, model, SERVER_FLAGS) as base:
        completions = _completions(base, COMPLETIONS, _BASE)
        probs = {}
        for name, fields in PROBS.items():
            body = {**_BASE, **fields}
            status, answer = request_json(f"{base}/completion", body, timeout=120)
            assert status == 200, (name, answer)
            probs[name] = {"body": body, "probabilities": answer["completion_probabilities"]}
        chats = {}
        for name, fields in CHATS.items():
            body = {**_CHAT_BASE, **fields}
            status, answer = request_json(f"{base}/v1/chat/completions", body, timeout=120)
            assert status == 200, (name, answer)
            chats[name] = {"body": body, "content": answer["choices"][0]["message"]["content"]}
        responses = {}
        for name, body in RESPONSES.items():
            status, answer = request_json(f"{base}/v1/responses", body, timeout=120)
            assert status == 200, (name, answer)
            text = "".join(
                part["text"]
                for item in answer["output"]
                if item["type"] == "message"
                for part in item["content"]
            )
            responses[name] = {"body": body, "content": text}
        bad = {}
        for name, fields in BAD.items():
            body = {**_BASE, **fields}
            status, answer = request_json(f"{base}/completion", body, timeout=120)
            kept = {"content": answer["content"]} if status == 200 else answer
            bad[name] = {"body": body, "status": status, "answer": kept}
    with _llama_server(server, model, [*SERVER_FLAGS, *DEFAULT_FLAGS]) as base:
        with urllib.request.urlopen(f"{base}/props", timeout=30) as response:
            props = json.loads(response.read())
        server_defaults = {
            "flags": DEFAULT_FLAGS,
            "params": props["default_generation_settings"]["params"],
            "completions": _completions(base, SERVER_DEFAULT_CASES, _PLAIN),
        }
    model_defaults: dict[str, Any] = {"strings": MODEL_SAMPLING}
    with tempfile.TemporaryDirectory() as work:
        tuned = write_tiny_gguf(
            pathlib.Path(work) / "alpha.gguf", name="alpha", strings=MODEL_SAMPLING
        )
        for name, flags in MODEL_FLAGS.items():
            with _llama_server(server, tuned, [*SERVER_FLAGS, *flags]) as base:
                with urllib.request.urlopen(f"{base}/props", timeout=30) as response:
                    props = json.loads(response.read())
                status, answer = request_json(f"{base}/completion", _PLAIN, timeout=120)
                assert status == 200, (name, answer)
                model_defaults[name] = {
                    "flags": flags,
                    "params": props["default_generation_settings"]["params"],
                    "body": _PLAIN,
                    "content": answer["content"],
                }
    return {
        "completions": completions,
        "model_defaults": model_defaults,
        "probs": probs,
        "chats": chats,
        "responses": responses,
        "bad": bad,
        "server_defaults": server_defaults,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-server", type=pathlib.Path, required=True)
    parser.add_argument(
        "--out", type=pathlib.Path, default=ROOT / "tests/worker/sampling_goldens/llama_server.json"
    )
    args = parser.parse_args()
    version = subprocess.run(
        [str(args.llama_server), "--version"], capture_output=True, text=True, check=False
    )
    with tempfile.TemporaryDirectory() as work:
        model = write_tiny_gguf(pathlib.Path(work) / "alpha.gguf", name="alpha")
        golden = _record(args.llama_server, model)
    golden = {
        "llama_server_version": (version.stdout + version.stderr).strip().splitlines()[-2:],
        "model": "tests/support/files/tiny_gguf.py write_tiny_gguf(name='alpha')",
        "server_flags": SERVER_FLAGS,
        **golden,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(golden['completions'])} completions, {len(golden['chats'])} chats recorded")


if __name__ == "__main__":
    main()
