"""A model file's check is remembered while the file is unchanged (router.catalogue.file_check)."""

from __future__ import annotations

import os
from pathlib import Path

from router.catalogue.file_check import model_file_problem
from tests.support.files.tiny_gguf import write_tiny_gguf


def test_a_file_changed_after_a_good_verdict_is_checked_again(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    write_tiny_gguf(path, name="m")
    assert model_file_problem(path) is None
    assert model_file_problem(path) is None  # the remembered verdict
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])  # cut short in place: same inode, new size
    problem = model_file_problem(path)
    assert problem is not None
    assert problem.startswith("file is truncated")


def test_a_file_replaced_by_one_of_the_same_size_is_checked_again(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    write_tiny_gguf(path, name="m")
    assert model_file_problem(path) is None
    stat = path.stat()
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00" * stat.st_size)
    os.utime(junk, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even the same mtime
    os.replace(junk, path)  # a new inode
    assert model_file_problem(path) == "not a GGUF file: it does not start with 'GGUF'"
