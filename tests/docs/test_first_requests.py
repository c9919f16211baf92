"""The first chat requests of README.md and docs/quickstart.md run as written after ``./serve.sh``.

Each page's ``curl`` example is run by the shell, as a reader would paste it, and README's
``openai`` example by the interpreter it names, against a real router serving the checkout's
``models/`` as ``serve.sh`` does (the bundled SmolLM2); only the address changes, since a test's
router listens on a port of its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.files.bundled_model import bundled_model
from tests.support.router_process import RouterProcess, running_router

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED = "http://127.0.0.1:8080"


@pytest.fixture(scope="module")
def served() -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(bundled_model().parent)]) as router:
        yield router


def _chat_example(page: Path, heading: str) -> str:
    """The first ``sh`` block after ``heading`` that posts to the chat completions route."""
    text = page.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    return next(block for block in blocks if "/v1/chat/completions" in block)


@pytest.mark.parametrize(
    ("page", "heading"),
    [("README.md", "## The first request"), ("docs/quickstart.md", "## 4. Chat")],
)
def test_the_first_chat_example_runs_as_written(
    served: RouterProcess, page: str, heading: str
) -> None:
    command = _chat_example(ROOT / page, heading)
    assert command.startswith(f"curl {DOCUMENTED}/")
    command = command.replace(f"curl {DOCUMENTED}", f"curl --silent --show-error {served.url}")
    ran = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    answer = json.loads(ran.stdout)
    assert "error" not in answer, answer
    assert answer["choices"][0]["message"]["content"].strip()


def test_the_readme_s_openai_example_runs_where_it_says_to_install_the_client(
    served: RouterProcess,
) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## The first request") :]
    before, _, rest = section.partition("```python\n")
    program = rest.partition("```")[0]
    # The reader is told which environment: Corral's own, where this suite's openai lives.
    assert "`.venv/bin/pip install openai`" in before
    assert "`.venv/bin/python`" in before
    ran = subprocess.run(
        [sys.executable, "-c", program.replace(DOCUMENTED, served.url)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip()
