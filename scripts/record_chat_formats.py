"""Record which chat format llama-server picks for each of llama.cpp's own chat templates.

llama.cpp either hands a template to a dedicated parser (its debug log says "Using specialized
template: NAME") or works the format out by rendering the template with sample messages (its
"differential autoparser", whose findings it logs: the tool-call markers, the reasoning tags
…). For every ``models/templates/*.jinja`` this builds the tiny test GGUF with the template,
starts a real ``llama-server`` with debug logging, asks ``/apply-template`` a conversation with
tools, and writes what the log says to ``tests/worker/chat/formats/llama_server_formats.json``;
``tests/worker/chat/formats/test_template_formats.py`` checks Corral tells the same format.

    .venv/bin/python scripts/record_chat_formats.py \
        --llama-server /work/llama/build/bin/llama-server \
        --templates .../vendor/llama.cpp/models/templates
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.record_template_goldens import CONVERSATIONS, _free_port, _request  # noqa: E402
from tests.support.files.tiny_gguf import write_tiny_gguf  # noqa: E402

_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_LOG_LINE = re.compile(r"^\d+\.\d+\.\d+\.\d+ [DIWE] ", re.MULTILINE)
# The autoparser's findings worth keeping (its log prints these as "key: value").
_FINDINGS = (
    "reasoning_mode", "reasoning_start", "reasoning_end", "content_mode", "content_start",
    "content_end", "tool_mode", "supports_tools", "tool_section_start", "tool_section_end",
    "per_call_start", "per_call_end", "func_name_prefix", "func_name_suffix", "func_close",
    "args_start", "args_end", "arg_name_prefix", "arg_name_suffix", "arg_value_prefix",
    "arg_value_suffix", "name_field", "args_field", "id_field",
)  # fmt: skip


def _entries(log: str) -> list[str]:
    """The log's messages, each possibly spanning lines, without their timestamps."""
    heads = list(_LOG_LINE.finditer(log))
    starts = [m.end() for m in heads]
    ends = [*(m.start() for m in heads[1:]), len(log)]
    return [log[s:e].rstrip("\n") for s, e in zip(starts, ends, strict=True)]


def _findings(log: str) -> dict[str, Any]:
    entries = _entries(_COLOUR.sub("", log))
    specialized = [e.split(": ", 1)[1] for e in entries if e.startswith("Using specialized")]
    if specialized:
        return {"specialized": specialized[-1].strip()}
    starts = [i for i, e in enumerate(entries) if "Starting differential analysis" in e]
    if not starts:
        return {"neither": True}
    found: dict[str, str] = {}
    for entry in entries[starts[-1] :]:
        key, sep, value = entry.partition(": ")
        if sep and key in _FINDINGS:
            found[key] = value[1:-1] if value.startswith("'") and value.endswith("'") else value
        if "Differential analysis complete" in entry:
            break
    return {"autoparser": found}


def _record_one(server: pathlib.Path, template: pathlib.Path, work: pathlib.Path) -> dict[str, Any]:
    model = write_tiny_gguf(work / "model.gguf", chat_template=template.read_text())
    port = _free_port()
    argv = [str(server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            "-c", "1024", "-np", "1", "--no-warmup", "--verbose"]  # fmt: skip
    log_path = work / "server.log"
    with log_path.open("w") as log, subprocess.Popen(argv, stdout=log, stderr=log) as process:
        try:
            base = f"http://127.0.0.1:{port}"
            while process.poll() is None:
                try:
                    if _request(f"{base}/health")[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)  # a one-off recording script polling a starting server
            else:
                return {"load_error": True}
            status, answer = _request(f"{base}/apply-template", CONVERSATIONS["tools"])
        finally:
            process.terminate()
            process.wait(30)
    record = _findings(log_path.read_text(errors="replace"))
    if status != 200:
        record["refused"] = {"status": status, "error": answer}
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-server", type=pathlib.Path, required=True)
    parser.add_argument("--templates", type=pathlib.Path, required=True)
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        default=ROOT / "tests/worker/chat/formats/llama_server_formats.json",
    )
    args = parser.parse_args()
    records = {}
    for template in sorted(args.templates.glob("*.jinja")):
        with tempfile.TemporaryDirectory() as work:
            records[template.stem] = _record_one(args.llama_server, template, pathlib.Path(work))
        print(template.stem, json.dumps(records[template.stem])[:120], flush=True)
    args.out.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
