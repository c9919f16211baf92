"""A JSON Schema ``pattern`` as GBNF: llama.cpp's ``_pattern_to_rule`` ported line by line
(``common/json-schema-to-grammar.cpp``), byte for byte (see ``schema_grammar``)."""

from __future__ import annotations

from collections.abc import Callable

from worker.sampling.json_schema import stoi
from worker.sampling.schema_rules import INT_MAX, build_repetition

__all__ = ["InvalidPattern", "UnsupportedPattern", "pattern_to_rule"]

_MAX_PATTERN_DEPTH = 100
_NON_LITERAL = frozenset("|.()[]{}*+?^$")
_ESCAPED_IN_REGEXPS_BUT_NOT_IN_LITERALS = frozenset("^$.[]()|{}*+?")
_HEX = frozenset("0123456789abcdefABCDEF")


class UnsupportedPattern(ValueError):
    """A valid regular expression with no grammar equivalent: the string goes unconstrained."""


class InvalidPattern(ValueError):
    """Not a regular expression: the schema is an error."""


def _escape_length(pattern: str, pos: int) -> int:
    """How long the GBNF escape at ``pos`` is; 0 if there is none GBNF knows."""
    if pos + 1 >= len(pattern) or pattern[pos] != "\\":
        return 0
    kind = pattern[pos + 1]
    if kind in 'trn\\"[]-':
        return 2
    n_hex = {"x": 2, "u": 4, "U": 8}.get(kind, 0)
    if not n_hex or pos + 2 + n_hex > len(pattern):
        return 0
    if not all(h in _HEX for h in pattern[pos + 2 : pos + 2 + n_hex]):
        return 0
    return 2 + n_hex


class _Transform:
    def __init__(self, pattern: str, name: str, add_rule: Callable[[str, str], str], dot: str):
        self.sub = pattern[1:-1]
        self.name = name
        self.add_rule = add_rule
        self.dot = dot
        self.i = 0
        self.depth = 0
        self.sub_rule_ids: dict[str, str] = {}

    def transform(self) -> str:
        seq: list[tuple[str, bool]] = []  # (text, is_literal)
        sub, length = self.sub, len(self.sub)
        while self.i < length:
            c = sub[self.i]
            if c == ".":
                seq.append((self.add_rule("dot", self.dot), False))
                self.i += 1
            elif c == "(":
                self.i += 1
                if self.i < length and sub[self.i] == "?":
                    if self.i + 1 < length and sub[self.i + 1] == ":":
                        self.i += 2  # a non-capturing group is a group
                    else:
                        raise UnsupportedPattern("unsupported group syntax")
                self.depth += 1
                if self.depth > _MAX_PATTERN_DEPTH:
                    raise UnsupportedPattern("pattern nesting too deep")
                seq.append(("(" + self.transform() + ")", False))
            elif c == ")":
                self.i += 1
                if self.depth == 0:
                    raise InvalidPattern("unbalanced parentheses")
                self.depth -= 1
                return _join(seq)
            elif c in "^$":
                raise UnsupportedPattern("anchor inside the pattern")
            elif c == "[":
                seq.append((self._char_class(), False))
            elif c == "|":
                seq.append(("|", False))
                self.i += 1
            elif c in "*+?":
                if not seq:
                    raise InvalidPattern("nothing to repeat")
                seq[-1] = (_to_rule(seq[-1]) + c, False)
                self.i += 1
            elif c == "{":
                self._repeat(seq)
            else:
                seq.append((self._literal(c), True))
        return _join(seq)

    def _char_class(self) -> str:
        sub, length = self.sub, len(self.sub)
        out = "["
        self.i += 1
        while self.i < length and sub[self.i] != "]":
            if sub[self.i] == "\\":
                n = _escape_length(sub, self.i)
                if n == 0:
                    escape = sub[self.i : self.i + 2]
                    raise UnsupportedPattern(f"unsupported escape in character class: {escape}")
                out += sub[self.i : self.i + n]
                self.i += n
            else:
                out += sub[self.i]
                self.i += 1
        if self.i >= length:
            raise InvalidPattern("unterminated character class")
        self.i += 1
        return out + "]"

    def _repeat(self, seq: list[tuple[str, bool]]) -> None:
        sub, length = self.sub, len(self.sub)
        start = self.i + 1
        self.i += 1
        while self.i < length and sub[self.i] != "}":
            self.i += 1
        if self.i >= length:
            raise UnsupportedPattern("unterminated curly brackets")
        nums = sub[start : self.i].split(",")
        self.i += 1
        if len(nums) not in (1, 2):
            raise UnsupportedPattern("wrong number of values in curly brackets")
        try:
            if len(nums) == 1:
                min_times = max_times = stoi(nums[0])
            else:
                min_times = stoi(nums[0]) if nums[0] else 0
                max_times = stoi(nums[1]) if nums[1] else INT_MAX
        except ValueError:
            raise UnsupportedPattern("invalid number in curly brackets") from None
        if not seq:
            raise InvalidPattern("nothing to repeat")
        text, is_literal = seq[-1]
        if not is_literal:
            if text not in self.sub_rule_ids:
                self.sub_rule_ids[text] = ""  # counted before the rule is named, as in C++
                rule_name = f"{self.name}-{len(self.sub_rule_ids)}"
                self.sub_rule_ids[text] = self.add_rule(rule_name, text)
            text = self.sub_rule_ids[text]
        item = f'"{text}"' if is_literal else text
        seq[-1] = (build_repetition(item, min_times, max_times, ""), False)

    def _literal(self, c: str) -> str:
        sub, length = self.sub, len(self.sub)
        literal = ""
        while self.i < length:
            here = sub[self.i]
            if here == "\\":
                if self.i == length - 1:
                    raise InvalidPattern("trailing backslash")
                following = sub[self.i + 1]
                if following in _ESCAPED_IN_REGEXPS_BUT_NOT_IN_LITERALS:
                    literal += following
                    self.i += 2
                else:
                    n = _escape_length(sub, self.i)
                    if n == 0:
                        escape = sub[self.i : self.i + 2]
                        raise UnsupportedPattern(f"unsupported escape: {escape}")
                    literal += sub[self.i : self.i + n]
                    self.i += n
            elif here == '"':
                literal += '\\"'
                self.i += 1
            elif here not in _NON_LITERAL and (
                self.i == length - 1
                or not literal
                or sub[self.i + 1] == "."
                or sub[self.i + 1] not in _NON_LITERAL
            ):
                literal += here
                self.i += 1
            else:
                break
        if not literal:  # nothing was consumed, e.g. a stray ']' or '}'
            raise UnsupportedPattern(f"unsupported character: {c}")
        return literal


def _to_rule(item: tuple[str, bool]) -> str:
    text, is_literal = item
    return f'"{text}"' if is_literal else text


def _join(seq: list[tuple[str, bool]]) -> str:
    """The sequence as GBNF, consecutive literals merged into one."""
    parts: list[str] = []
    literal = ""
    for text, is_literal in seq:
        if is_literal:
            literal += text
            continue
        if literal:
            parts.append(f'"{literal}"')
            literal = ""
        parts.append(text)
    if literal:
        parts.append(f'"{literal}"')
    return " ".join(parts)


def pattern_to_rule(pattern: str, name: str, add_rule: Callable[[str, str], str], dot: str) -> str:
    """The rule ``name`` for strings matching ``pattern``; ``add_rule`` adds the rules it
    needs (``dot``: the rule for "."). Raises UnsupportedPattern or InvalidPattern."""
    if len(pattern) < 2 or pattern[0] != "^" or pattern[-1] != "$":
        raise UnsupportedPattern("not anchored with '^' and '$'")
    state = _Transform(pattern, name, add_rule, dot)
    rule = state.transform()
    if state.depth != 0:
        raise InvalidPattern("unbalanced parentheses")
    return add_rule(name, f'"\\"" ({rule}) "\\""')
