"""The child → router line protocol: state lines among log lines, long lines, garbage."""

from __future__ import annotations

import msgspec

from corral.children.protocol import (
    EXIT_COMMAND,
    LOAD_PREFIX,
    RESTORE_STATE,
    STATE_PREFIX,
    THREADS_PREFIX,
    LineSplitter,
    LogLine,
    MalformedLine,
    RestoreNote,
    StateMessage,
    ThreadsCommand,
    encode_load,
    encode_state,
    encode_threads,
    parse_line,
    parse_load,
    parse_restore,
    parse_threads,
)


def _parse_stream(*chunks: bytes, max_line: int = 1 << 20) -> list[object]:
    splitter = LineSplitter(max_line)
    lines = [line for chunk in chunks for line in splitter.feed(chunk)] + splitter.flush()
    return [parse_line(line) for line in lines]


def test_state_line_round_trips() -> None:
    encoded = encode_state("ready", {"port": 4242, "meta": {"n_ctx": 512}})
    parsed = [item for item in _parse_stream(encoded) if item != LogLine("")]
    assert parsed == [StateMessage("ready", {"port": 4242, "meta": {"n_ctx": 512}})]


def test_state_line_after_partial_log_line_is_still_recognised() -> None:
    # A library wrote half a line without a newline; the leading newline of the state line ends it.
    stream = b"llama.cpp: loading" + encode_state("loading", {"value": 0.5}) + b"done\n"
    parsed = _parse_stream(stream)
    assert LogLine("llama.cpp: loading") in parsed
    assert StateMessage("loading", {"value": 0.5}) in parsed
    assert parsed[-1] == LogLine("done")


def test_lines_split_across_chunks_at_every_byte() -> None:
    stream = b"first log\n" + encode_state("sleeping") + b"last log\n"
    for cut in range(1, len(stream)):
        parsed = [item for item in _parse_stream(stream[:cut], stream[cut:]) if item != LogLine("")]
        assert parsed == [LogLine("first log"), StateMessage("sleeping", {}), LogLine("last log")]


def test_garbage_after_prefix_is_malformed_not_fatal() -> None:
    parsed = _parse_stream(STATE_PREFIX + b"{not json\n", STATE_PREFIX + b'{"payload": {}}\n')
    assert all(isinstance(item, MalformedLine) for item in parsed)
    assert len(parsed) == 2


def test_unknown_state_is_decoded_for_the_router_to_ignore() -> None:
    assert _parse_stream(STATE_PREFIX + b'{"state": "dancing"}\n') == [StateMessage("dancing", {})]


def test_binary_garbage_is_a_log_line() -> None:
    parsed = _parse_stream(b"\xff\xfe\x00garbage\r\n")
    assert parsed == [LogLine("\ufffd\ufffd\x00garbage")]


def test_overlong_line_is_cut_and_the_rest_skipped() -> None:
    parsed = _parse_stream(b"x" * 50, b"y" * 50 + b"\n", b"next\n", max_line=16)
    assert parsed == [LogLine("x" * 16), LogLine("next")]


def test_overlong_state_line_is_malformed_not_misread() -> None:
    huge = encode_state("ready", {"blob": "z" * 100})
    parsed = [item for item in _parse_stream(huge, max_line=64) if item != LogLine("")]
    assert len(parsed) == 1
    assert isinstance(parsed[0], MalformedLine)


def test_unterminated_tail_is_flushed_at_eof() -> None:
    assert _parse_stream(b"line one\nno newline") == [LogLine("line one"), LogLine("no newline")]


def test_a_load_command_carries_the_worker_flags_through() -> None:
    argv = ["--model", "/models/a b.gguf", "--alias", "ä", "--ctx-size", "512"]
    line = encode_load(argv)
    assert line.startswith(LOAD_PREFIX)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    command = parse_load(line.rstrip(b"\n"))
    assert command is not None
    assert command.argv == argv


def test_anything_else_on_stdin_is_no_load_command() -> None:
    assert parse_load(EXIT_COMMAND) is None
    assert parse_load(LOAD_PREFIX + b'{"argv": "not a list"}') is None
    assert parse_load(LOAD_PREFIX + b"{") is None


def test_a_threads_command_round_trips_and_anything_else_is_none() -> None:
    line = encode_threads(1, 2)
    assert line == THREADS_PREFIX + b'{"threads":1,"threads_batch":2}\n'
    assert parse_threads(line.rstrip(b"\n")) == ThreadsCommand(1, 2)
    assert parse_threads(EXIT_COMMAND) is None
    assert parse_load(line) is None
    assert parse_threads(THREADS_PREFIX + b'{"threads": 1}') is None
    assert parse_threads(THREADS_PREFIX + b'{"threads": 0, "threads_batch": 1}') is None


def test_a_restore_note_round_trips_and_anything_else_is_none() -> None:
    note = RestoreNote("r12", done=True, tokens=40, at=1764380000.5)
    encoded = encode_state(RESTORE_STATE, msgspec.structs.asdict(note))
    (line,) = [item for item in _parse_stream(encoded) if item != LogLine("")]
    assert isinstance(line, StateMessage)
    assert line.state == RESTORE_STATE
    assert parse_restore(line.payload) == note
    assert parse_restore({"request": "r12"}) == RestoreNote("r12", done=False, tokens=0, at=0.0)
    assert parse_restore({"done": True}) is None
