"""Record llama-server's ``/apply-template`` answers for llama.cpp's own chat templates.

For every ``models/templates/*.jinja`` of the vendored llama.cpp, build the tiny test GGUF with
that template embedded, start a real ``llama-server`` on it and ask it four conversations
(docs/templates.md). The answers, refusals included, and the template's capabilities from
``/props`` are written to ``tests/worker/template_goldens/``; ``tests/worker/templates/``
renders the same cases through Corral and compares them byte for byte.

    .venv/bin/python scripts/record_template_goldens.py \
        --llama-server /work/llama/build/bin/llama-server \
        --templates .../vendor/llama.cpp/models/templates

Each golden file carries its template's text, so the tests need no llama.cpp checkout. The
manifest names the llama-server build (its ``--version``) and the local date and time the
answers were recorded at: templates that print today's date print that one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.files.tiny_gguf import write_tiny_gguf  # noqa: E402

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
]
_DIALOGUE = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello, who are you?"},
    {"role": "assistant", "content": "I am an assistant. How can I help?"},
    {"role": "user", "content": "What is the weather in Paris?"},
]
CONVERSATIONS: dict[str, dict[str, Any]] = {
    "user": {"messages": [{"role": "user", "content": "Hello, who are you?"}]},
    "dialogue": {"messages": _DIALOGUE},
    "tools": {"messages": _DIALOGUE, "tools": _TOOLS},
    "tool_result": {
        "messages": [
            {"role": "user", "content": "What is the weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": '{"city": "Paris", "unit": "celsius"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees, sunny"},
        ],
        "tools": _TOOLS,
    },
    # Not the four: the request's kwargs reaching the template, and earlier reasoning
    # (kept by default: llama-server's preserve_reasoning).
    "no_thinking": {"messages": _DIALOGUE, "chat_template_kwargs": {"enable_thinking": False}},
    "reasoning": {
        "messages": [
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": "4.", "reasoning_content": "Two and two make four."},
            {"role": "user", "content": "And 3 + 3?"},
        ]
    },
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def request_json(
    url: str, body: dict[str, Any] | None = None, timeout: float = 60
) -> tuple[int, Any]:
    """A GET, or a POST of ``body`` as JSON: the status and the JSON answer, errors included."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _record_one(server: pathlib.Path, template: pathlib.Path, work: pathlib.Path) -> dict[str, Any]:
    model = write_tiny_gguf(work / "model.gguf", chat_template=template.read_text())
    port = free_port()
    argv = [str(server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            "-c", "1024", "-np", "1", "--no-warmup"]  # fmt: skip
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        try:
            base = f"http://127.0.0.1:{port}"
            while True:
                if process.poll() is not None:  # refused to load the template at all
                    error = process.stderr.read().decode(errors="replace") if process.stderr else ""
                    return {"load_error": error.strip().splitlines()[-1:]}
                try:
                    if request_json(f"{base}/health")[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)  # a one-off recording script polling a starting server
            cases = {}
            for name, body in CONVERSATIONS.items():
                status, answer = request_json(f"{base}/apply-template", body)
                cases[name] = {"prompt": answer["prompt"]} if status == 200 else {"error": answer}
            _, props = request_json(f"{base}/props")
            return {"caps": props.get("chat_template_caps"), "cases": cases}
        finally:
            process.terminate()
            process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-server", type=pathlib.Path, required=True)
    parser.add_argument("--templates", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "tests/worker/template_goldens")
    args = parser.parse_args()
    version = subprocess.run(
        [str(args.llama_server), "--version"], capture_output=True, text=True, check=False
    )
    args.out.mkdir(parents=True, exist_ok=True)
    recorded_at = datetime.datetime.now().astimezone()
    rendered = refused = 0
    for template in sorted(args.templates.glob("*.jinja")):
        with tempfile.TemporaryDirectory() as work:
            golden = _record_one(args.llama_server, template, pathlib.Path(work))
        for case in golden.get("cases", {}).values():
            rendered += "prompt" in case
            refused += "error" in case
        # The template travels with its answers: the tests must not need the sdist.
        golden = {"template": template.name, "source": template.read_text(), **golden}
        target = args.out / f"{template.stem}.json"
        target.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
        print(template.name, {k: "prompt" in v for k, v in golden.get("cases", {}).items()})
    manifest = {
        "llama_server_version": (version.stdout + version.stderr).strip().splitlines()[-2:],
        "recorded_at": recorded_at.isoformat(),
        "templates": "vendor/llama.cpp/models/templates of the llama-cpp-python sdist the "
        "llama-server was built from",
        "conversations": CONVERSATIONS,
        "rendered": rendered,
        "refused": refused,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{rendered} prompts rendered, {refused} refused")


if __name__ == "__main__":
    main()
