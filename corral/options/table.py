"""The one table of per-model options: every spelling, kind, role, meaning and use of each option.

:data:`OPTIONS` is the only place that knows an option's spellings (long, short, negative,
``LLAMA_ARG_*``), its kind, whether it becomes a worker flag, what it means (its help) and which
worker setting it fills (its ``dest``) or why it has no effect. Its rows are written by group in
:mod:`corral.options.rows`. The router's preset INI, its per-model CLI defaults, the
worker-argument renderer, the worker's own flags (:mod:`corral.options.flags`) and settings, and
the generated docs all go through it, so a key means the same thing wherever it is written.
Values are normalised by their kind's object (:mod:`corral.options.kinds`); the row's types and
the parsers of :mod:`corral.options.values` are exported from here too.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.options.kinds import KINDS, normalise_value
from corral.options.rows import (
    adapters,
    catalogue,
    chat,
    context,
    gpu,
    loading,
    requests,
    serving,
    speculative,
)
from corral.options.rows.speculative import SPEC_TYPES
from corral.options.sampling_fields import sampling_option_rows
from corral.options.values import (
    OptionError,
    OptionSpec,
    parse_bool,
    parse_size,
    string_items,
)
from corral.suggest import did_you_mean

__all__ = [
    "OPTIONS",
    "SPEC_TYPES",
    "OptionError",
    "OptionSpec",
    "find_option",
    "normalise_options",
    "option_spec",
    "parse_bool",
    "parse_size",
    "render_worker_args",
    "string_items",
]

_IGNORED_KEYS = frozenset({"version"})  # reserved by upstream for future use
# In table order, which is the order the worker flags are rendered in and the docs list them:
# the groups are consecutive runs of it.
OPTIONS: tuple[OptionSpec, ...] = (
    *catalogue.ROWS,
    *context.ROWS,
    # llama-server's sampling flags, each a request default: the table of sampling fields' rows.
    *sampling_option_rows(),
    *chat.ROWS,
    *loading.ROWS,
    *serving.ROWS,
    *adapters.ROWS,
    *speculative.ROWS,
    *gpu.ROWS,
    *requests.ROWS,
)

_BY_NAME: dict[str, OptionSpec] = {spec.name: spec for spec in OPTIONS}
# Every spelling → (option, whether the spelling is a negative one).
_BY_KEY: dict[str, tuple[OptionSpec, bool]] = {
    key: (spec, negated)
    for spec in OPTIONS
    for negated, keys in ((False, (spec.name, *spec.spellings)), (True, spec.negatives))
    for key in keys
}


def option_spec(name: str) -> OptionSpec:
    """The option whose canonical name this is."""
    return _BY_NAME[name]


def find_option(key: str) -> tuple[OptionSpec, bool] | None:
    """The option a key spells, and whether the spelling is a negative one (``no-mmap``)."""
    return _BY_KEY.get(key.lstrip("-"))


def normalise_options(pairs: Iterable[tuple[str, str]], *, where: str) -> dict[str, str]:
    """``key = value`` pairs in any spelling → canonical name → normalised value.

    ``where`` starts every message (e.g. ``"models.ini: section [foo]"``). Two spellings of one
    option in the same place are an error rather than a silent last-one-wins.
    """
    options: dict[str, str] = {}
    spelled_as: dict[str, str] = {}
    for key, raw in pairs:
        if key in _IGNORED_KEYS:
            continue
        found = find_option(key)
        if found is None:
            known = [k for k in _BY_KEY if not k.startswith(("LLAMA_ARG_", "__PRESET_"))]
            raise OptionError(f"{where}: unknown key '{key}'{did_you_mean(key, known)}")
        spec, negated = found
        if spec.name in options:
            first = spelled_as[spec.name]
            raise OptionError(f"{where}: key '{key}' sets '{spec.name}' again (as '{first}' did)")
        try:
            options[spec.name] = normalise_value(spec, raw.strip(), negated=negated)
        except ValueError as error:
            raise OptionError(f"{where}: key '{key}': {error}") from None
        spelled_as[spec.name] = key
    return options


def render_worker_args(options: Iterable[tuple[str, str]]) -> list[str]:
    """Worker flags for the worker-role options: ``--ctx-size 2048``, ``--jinja``, ``--no-mmap``.

    A false boolean without a negative flag is left out: the worker's default is already off.
    """
    args: list[str] = []
    for name, value in options:
        spec = _BY_NAME[name]
        kind = KINDS[spec.kind]
        if spec.role != "worker":
            continue
        if kind.takes != "switch":
            args += kind.worker_args(f"--{name}", value)
        elif value == "true":
            args.append(f"--{name}")
        elif spec.negatives:
            args.append(f"--{spec.negatives[0]}")
    return args
