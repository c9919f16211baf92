"""Text assembly and stop strings (worker.sampling.text), without a model."""

from __future__ import annotations

from worker.sampling.text import IndentLimit, StopMatcher, TextAssembler


def _feed_all(matcher: StopMatcher, pieces: list[str]) -> str:
    return "".join(matcher.feed(piece) for piece in pieces)


def test_text_without_stops_passes_straight_through() -> None:
    matcher = StopMatcher([])
    assert matcher.feed("Hello ") == "Hello "
    assert matcher.flush() == ""
    assert matcher.matched is None


def test_a_stop_string_split_over_pieces_never_reaches_the_client() -> None:
    matcher = StopMatcher(["</end>"])
    sent = _feed_all(matcher, ["answer </", "en", "d> more"])
    assert sent == "answer "
    assert matcher.matched == "</end>"


def test_a_held_tail_that_was_no_stop_is_released_later() -> None:
    matcher = StopMatcher(["STOP"])
    assert matcher.feed("go ST") == "go "  # "ST" could still become "STOP"
    assert matcher.feed("ay") == "STay"
    assert matcher.matched is None


def test_the_held_tail_is_flushed_at_the_end_of_generation() -> None:
    matcher = StopMatcher(["STOP"])
    assert matcher.feed("end ST") == "end "
    assert matcher.flush() == "ST"
    assert matcher.flush() == ""


def test_the_earliest_of_several_stop_strings_wins() -> None:
    matcher = StopMatcher(["world", "lo"])
    assert matcher.feed("hello world") == "hel"
    assert matcher.matched == "lo"


def test_empty_stop_strings_are_ignored() -> None:
    matcher = StopMatcher(["", "x"])
    assert matcher.feed("abc") == "abc"
    assert matcher.matched is None


def test_a_character_split_over_tokens_waits_for_its_last_byte() -> None:
    assembler = TextAssembler()
    encoded = "é!".encode()
    assert assembler.feed(encoded[:1]) == ""
    assert assembler.feed(encoded[1:]) == "é!"
    assert assembler.finish() == ""


def test_a_truncated_character_becomes_a_replacement_at_the_end() -> None:
    assembler = TextAssembler()
    assert assembler.feed("é".encode()[:1]) == ""
    assert assembler.finish() == "\ufffd"


def _ends(limit: IndentLimit, pieces: list[str]) -> list[int | None]:
    return [limit.feed(piece) for piece in pieces]


def test_a_line_indented_less_than_n_indent_ends_the_text_before_it() -> None:
    # As upstream, lines are looked at from the token after the first new line on.
    ends = _ends(IndentLimit(4), ["if x:", "\n", "    y", "\n", "z"])
    assert ends == [None, None, None, None, len("if x:\n    y\n")]


def test_deep_enough_lines_and_no_limit_end_nothing() -> None:
    assert _ends(IndentLimit(2), ["a", "\n", "  b", "\n", "  c", "d"]) == [None] * 6
    assert _ends(IndentLimit(0), ["a", "\n", "b", "c"]) == [None] * 4
