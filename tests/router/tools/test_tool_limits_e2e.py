"""The read and search tools against requests made to stall a real router or fill its memory
(docs/security.md, Requests that could stall the router or fill its memory; docs/tools.md).

Each attack is one a client can send: a backtracking regex or glob, a range of a huge file of
one line, a grep over a folder holding a model-sized file, a FIFO. A stalled router would not
answer within the client's timeout (a regex that backtracks runs for hours here, RE2 answers at
once); memory is the router's peak RSS, never a duration.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.process_memory import peak_rss_bytes, sparse_file
from tests.support.router_process import RouterProcess, running_router

HUGE = 256 * 1024 * 1024  # one line of zero bytes, sparse: no room on the disk
# Far below the file's size: reading it whole (and decoding, and splitting it) costs 3 times it.
MEMORY_GROWTH_BOUND = 64 * 1024 * 1024
# Long ordinary lines: (.|.)*QQQ backtracks 2**60 ways on each of them in Python's re.
PROSE = "the quick brown fox jumps over the lazy dog, and back again!!\n" * 20
LONG_NAME = "e" * 60 + ".txt"  # **e**e**e… over it: C(60, 12) ways for a backtracking glob


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("limits")
    (root / "prose.txt").write_text(PROSE)
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('needle')\n")
    (root / "src" / LONG_NAME).write_text("needle\n")
    sparse_file(root / "huge.bin", HUGE)
    os.mkfifo(root / "pipe")
    return root


def _serve(workspace: Path) -> Iterator[RouterProcess]:
    args = ["--tools", "read_file,grep_search,file_glob_search", "--tools-root", str(workspace)]
    with running_router(args) as router:
        yield router


@pytest.fixture(scope="module")
def router(workspace: Path) -> Iterator[RouterProcess]:
    yield from _serve(workspace)


@pytest.fixture
def fresh_router(workspace: Path) -> Iterator[RouterProcess]:
    """A router of its own: its peak memory is this test's alone."""
    yield from _serve(workspace)


def _call(router: RouterProcess, tool: str, **params: Any) -> Any:
    response = router.client.post("/tools", json={"tool": tool, "params": params}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_backtracking_regex_neither_stalls_the_router_nor_the_search(
    router: RouterProcess,
) -> None:
    with ThreadPoolExecutor(1) as pool:
        grep = pool.submit(_call, router, "grep_search", path="prose.txt", pattern="(.|.)*QQQ")
        health = router.client.get("/health", timeout=30)
        answer = grep.result()
    assert health.json() == {"status": "ok"}
    assert "Total matches: 0" in answer["plain_text_response"]
    found = _call(router, "grep_search", path="prose.txt", pattern="(.|.)*dog", ignore_case=True)
    assert "Total matches: 20" in found["plain_text_response"]


@pytest.mark.parametrize("pattern", [r"(o)\1", "fox(?= jumps)", "(?<!lazy )dog"])
def test_patterns_re2_cannot_match_are_the_tools_error(router: RouterProcess, pattern: str) -> None:
    answer = _call(router, "grep_search", path="prose.txt", pattern=pattern)
    assert answer["error"].startswith("invalid regex: ")
    assert "RE2 syntax" in answer["error"]


def test_a_backtracking_glob_neither_stalls_the_router_nor_the_search(
    router: RouterProcess,
) -> None:
    glob = "**e" * 12 + "**Z"
    listing = _call(router, "file_glob_search", path=".", include=glob)
    assert "Total matches: 0" in listing["plain_text_response"]
    found = _call(router, "file_glob_search", path=".", include="**e" * 12 + "**.txt")
    assert [entry["path"] for entry in found["entries"]] == [f"src/{LONG_NAME}"]
    grep = _call(router, "grep_search", path=".", pattern="needle", include=glob)
    assert "Total matches: 0" in grep["plain_text_response"]


@pytest.mark.parametrize("tool", ["file_glob_search", "grep_search"])
def test_a_glob_class_that_is_no_class_is_the_tools_error(router: RouterProcess, tool: str) -> None:
    answer = _call(router, tool, path=".", pattern="needle", include="[z-a]")
    assert answer["error"].startswith('invalid glob pattern "[z-a]": ')


def test_reading_a_fifo_answers_at_once(router: RouterProcess) -> None:
    assert _call(router, "read_file", path="pipe")["error"] == "failed to open file: pipe"
    assert _call(router, "read_file", path="pipe", end_line=1)["error"].startswith("failed")


def test_a_line_of_a_huge_file_is_read_within_the_cap(fresh_router: RouterProcess) -> None:
    before = peak_rss_bytes(fresh_router.process.pid)
    first = _call(fresh_router, "read_file", path="huge.bin", start_line=1, end_line=1)
    assert peak_rss_bytes(fresh_router.process.pid) - before < MEMORY_GROWTH_BOUND
    assert first == {"plain_text_response": "[output truncated]"}
    # The line goes on past what read_file reads at all (64 MiB) to find line 2.
    second = _call(fresh_router, "read_file", path="huge.bin", start_line=2, end_line=2)
    assert second["error"].startswith("line 2 is past the first 67108864 bytes of huge.bin")
    assert peak_rss_bytes(fresh_router.process.pid) - before < MEMORY_GROWTH_BOUND


def test_grep_skips_files_over_its_cap_and_says_so(fresh_router: RouterProcess) -> None:
    before = peak_rss_bytes(fresh_router.process.pid)
    text = _call(fresh_router, "grep_search", path=".", pattern="needle")["plain_text_response"]
    assert peak_rss_bytes(fresh_router.process.pid) - before < MEMORY_GROWTH_BOUND
    assert "src/main.py:print('needle')\n" in text
    assert "[skipped files larger than 16777216 bytes: huge.bin]" in text


def test_context_lines_are_shown_as_llama_servers(router: RouterProcess) -> None:
    text = _call(router, "grep_search", path="prose.txt", pattern="dog", context_lines=1)[
        "plain_text_response"
    ]
    line = PROSE.splitlines()[0]
    # Each match its own block, overlapping blocks repeating lines, as llama-server's.
    assert text.startswith(
        f"prose.txt:1:{line}\nprose.txt-2-{line}\n--\n"
        f"prose.txt-1-{line}\nprose.txt:2:{line}\nprose.txt-3-{line}\n--\n"
    )
    assert text.endswith(
        f"prose.txt-19-{line}\nprose.txt:20:{line}\n--\n\n---\nTotal matches: 20\n"
    )
