"""A model's options as typed values, each option's default the table's (llama-server's).

The router and the worker both hold a model's options as :class:`ModelOptions`: the normalised
text of the options given (:func:`corral.options.table.normalise_options` has checked it), read
through typed accessors that fall back to the table's default. So a default is written once, in
:data:`corral.options.table.OPTIONS`, and a reader never re-parses a string with a default of its
own; the router renders the same object to worker flags (:meth:`ModelOptions.worker_args`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from corral.options.table import option_spec, render_worker_args, string_items

__all__ = ["ModelOptions"]


class ModelOptions(msgspec.Struct, frozen=True):
    """The options given for one model (canonical name → normalised text)."""

    given: dict[str, str] = msgspec.field(default_factory=dict)

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> ModelOptions:
        return cls(dict(pairs))

    def __contains__(self, name: str) -> bool:
        return name in self.given

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.given.items())

    def text(self, name: str) -> str | None:
        """The option's text: given, else the table's default (None: no default)."""
        value = self.given.get(name)
        return option_spec(name).default if value is None else value

    def _required(self, name: str, kinds: tuple[str, ...]) -> str:
        # A reader asking for the wrong type is a programming error, caught on its first run.
        if option_spec(name).kind not in kinds:
            raise TypeError(f"option '{name}' is a {option_spec(name).kind}, not {kinds[0]}")
        value = self.text(name)
        if value is None:
            raise KeyError(f"option '{name}' has no default: read it with text()")
        return value

    def integer(self, name: str) -> int:
        return int(self._required(name, ("int", "size", "choice")))

    def real(self, name: str) -> float:
        return float(self._required(name, ("float", "int")))

    def flag(self, name: str) -> bool:
        """A bool or on-off option; normalised, its text is true/false or on/off."""
        return self._required(name, ("bool", "on-off")) in ("true", "on")

    def word(self, name: str) -> str:
        """A choice, switch or string option that has a default."""
        return self._required(name, ("choice", "switch", "str", "int"))

    def optional_integer(self, name: str) -> int | None:
        value = self.text(name)
        return None if value is None else int(value)

    def optional_real(self, name: str) -> float | None:
        value = self.text(name)
        return None if value is None else float(value)

    def path(self, name: str) -> Path | None:
        """A path option's path; not given, or given empty, None. llama.cpp keeps a path flag's
        text as given and its readers take an empty one as unset (``-lcs ""`` loads no cache);
        ``--slot-save-path ""`` is refused upstream only because "" names no folder."""
        if option_spec(name).kind != "str":
            raise TypeError(f"option '{name}' is a {option_spec(name).kind}, not str")
        value = self.text(name)
        return Path(value) if value else None

    def items(self, name: str) -> tuple[str, ...]:
        """A list option's items (comma-separated); none given, none."""
        value = self.text(name)
        return tuple(item for item in (value or "").split(",") if item)

    def strings(self, name: str) -> tuple[str, ...]:
        """A ``strings`` option's strings (each whole, commas included); none given, none."""
        if option_spec(name).kind != "strings":
            raise TypeError(f"option '{name}' is a {option_spec(name).kind}, not strings")
        value = self.text(name)
        return () if value is None else tuple(string_items(value))

    def worker_args(self) -> list[str]:
        """The worker flags these options render to (:func:`render_worker_args`)."""
        return render_worker_args(self.given.items())
