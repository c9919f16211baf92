"""The one table of sampling fields: each field's names, option, type, range and defaults.

A sampling field is one setting of llama.cpp's sampler chain that a request may set and a
per-model option gives the default of: ``top_k`` in a request body, ``--top-k`` on a command
line (``top-k`` in a preset), ``general.sampling.top_k`` in a model file, ``top_k`` in Ollama's
``options``. This module is the only product module that writes those names. Built from its
rows: the option table's sampling rows and their help (:func:`sampling_option_rows`, spliced
into :data:`corral.options.table.OPTIONS`), a worker's request defaults
(worker/sampling/server_defaults.py), a request's checks (worker/answer/sampling_request.py),
``generation_settings`` (worker/sampling/generation_settings.py) and the Ollama API's maps
(router/api/ollama). Code that needs one field by name uses its row (``TOP_K.option``).

The types that hold the fields as attributes (the request Struct ``SamplingFields``,
``SamplingParams``, Ollama's ``Options``) write them as Python fields, so that mypy checks every
use; tests/corral/options/test_sampling_fields.py checks them against this table, and that no other
product module writes a field's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from corral.options.values import Bound, OptionKind, OptionSpec

# Besides these, each row is a constant of its own (TOP_K, SAMPLERS, …), for code that needs
# one field by name.
__all__ = [
    "ANY",
    "INT32_MAX",
    "SAMPLING_FIELDS",
    "FieldKind",
    "Limit",
    "SamplingField",
    "sampling_option_rows",
]

INT32_MAX = 2**31 - 1
_FLT_MAX = 3.4028234663852886e38

# float/int: a number, read from its option with ModelOptions.real/integer; flag: an on/off
# option; other: a value its readers parse with code of their own (lists, the sampler order).
FieldKind = Literal["float", "int", "flag", "other"]


@dataclass(frozen=True, slots=True)
class Limit:
    """How a request's number is held to upstream's range (server-schema.cpp): ``soft`` clamps
    it into [low, high], ``hard`` refuses the request outside it, ``any`` takes it as it is."""

    strength: Literal["soft", "hard", "any"]
    low: float = 0
    high: float = 0


ANY = Limit("any")


@dataclass(frozen=True, slots=True)
class SamplingField:
    """One sampling field. ``request`` is llama-server's name in a request body, the
    ``SamplingParams`` attribute and the ``generation_settings`` key."""

    request: str
    kind: FieldKind
    # Its option rows, help included: the first is the field's own; none: no option
    options: tuple[OptionSpec, ...] = ()
    limit: Limit | None = None  # a number a request sets, checked so; None: own code reads it
    gguf: str = ""  # the model file's key for its default, which a flag beats; "": none
    ollama: str = ""  # the name in Ollama's `options`; "": none
    modelfile: bool = False  # Ollama's Modelfile documents it (/api/show's `parameters`)
    stages: tuple[str, ...] = ()  # the samplers (upstream's names) that read it

    @property
    def option(self) -> str:
        """The canonical name of the field's own option."""
        return self.options[0].name


def _option(
    name: str,
    kind: OptionKind,
    *,
    help: str,
    spellings: tuple[str, ...] = (),
    bound: Bound = "any",
    literals: tuple[str, ...] = (),
    default: str | None = None,
) -> tuple[OptionSpec]:
    spec = OptionSpec(
        name, kind, spellings=spellings, bound=bound, literals=literals, default=default, help=help
    )
    return (spec,)


_GGUF = "general.sampling."

# The rows, in the order llama-server writes them in ``generation_settings`` (server-task.cpp,
# task_params::to_json), which is the order the option table lists their options in and a
# request's numbers are checked in. One row a field; written as a table, unformatted.
SEED = SamplingField(
    "seed", "int", ollama="seed", modelfile=True, stages=("xtc", "mirostat", "adaptive_p", "dist"),
    options=_option("seed", "int", spellings=("s",), default="-1",
        help="default seed; `-1` = random"),
)  # fmt: skip
TEMPERATURE = SamplingField(
    "temperature", "float", limit=Limit("soft", 0.0, float("inf")), gguf=_GGUF + "temp",
    ollama="temperature", modelfile=True, stages=("temperature", "mirostat"),
    options=_option("temp", "float", spellings=("temperature", "LLAMA_ARG_TEMPERATURE"),
        bound="non_negative", default="0.8", help="default temperature"),
)  # fmt: skip
DYNATEMP_RANGE = SamplingField(
    "dynatemp_range", "float", limit=ANY, stages=("temperature",),
    options=_option("dynatemp-range", "float", default="0",
        help="dynamic temperature range (`0.0` = off)"),
)  # fmt: skip
DYNATEMP_EXPONENT = SamplingField(
    "dynatemp_exponent", "float", limit=ANY, stages=("temperature",),
    options=_option("dynatemp-exp", "float", default="1", help="dynamic temperature exponent"),
)  # fmt: skip
TOP_K = SamplingField(
    "top_k", "int", limit=Limit("soft", 0, INT32_MAX), gguf=_GGUF + "top_k", ollama="top_k",
    modelfile=True, stages=("top_k",),
    options=_option("top-k", "int", spellings=("LLAMA_ARG_TOP_K",), default="40",
        help="top-k sampling: keep the K likeliest tokens (`0` = off)"),
)  # fmt: skip
TOP_P = SamplingField(
    "top_p", "float", limit=Limit("soft", 0.0, 1.0), gguf=_GGUF + "top_p", ollama="top_p",
    modelfile=True, stages=("top_p",),
    options=_option("top-p", "float", spellings=("LLAMA_ARG_TOP_P",), default="0.95",
        help="top-p (nucleus) sampling (`1.0` = off)"),
)  # fmt: skip
MIN_P = SamplingField(
    "min_p", "float", limit=Limit("soft", 0.0, 1.0), gguf=_GGUF + "min_p", ollama="min_p",
    modelfile=True, stages=("min_p",),
    options=_option("min-p", "float", spellings=("LLAMA_ARG_MIN_P",), default="0.05",
        help="min-p sampling, relative to the likeliest token (`0.0` = off)"),
)  # fmt: skip
TOP_N_SIGMA = SamplingField(
    "top_n_sigma", "float", limit=ANY, stages=("top_n_sigma",),
    options=_option("top-nsigma", "float", spellings=("top-n-sigma",), default="-1",
        help="top-n-sigma sampling (`-1.0` = off)"),
)  # fmt: skip
XTC_PROBABILITY = SamplingField(
    "xtc_probability", "float", limit=Limit("soft", 0.0, 1.0), gguf=_GGUF + "xtc_probability",
    stages=("xtc",),
    options=_option("xtc-probability", "float", default="0",
        help="XTC: chance of removing the top tokens (`0.0` = off)"),
)  # fmt: skip
XTC_THRESHOLD = SamplingField(
    "xtc_threshold", "float", limit=Limit("soft", 0.0, 1.0), gguf=_GGUF + "xtc_threshold",
    stages=("xtc",),
    options=_option("xtc-threshold", "float", default="0.1",
        help="XTC: probability above which tokens are removed (above 0.5 = off)"),
)  # fmt: skip
TYPICAL_P = SamplingField(
    "typical_p", "float", limit=ANY, ollama="typical_p", stages=("typ_p",),
    options=_option("typical", "float", spellings=("typical-p",), default="1",
        help="locally typical sampling, parameter p (`1.0` = off)"),
)  # fmt: skip
REPEAT_LAST_N = SamplingField(
    "repeat_last_n", "int", limit=Limit("hard", 0, INT32_MAX), gguf=_GGUF + "penalty_last_n",
    ollama="repeat_last_n", modelfile=True, stages=("penalties",),
    options=_option("repeat-last-n", "int", bound="non_negative", default="64",
        help="last n tokens (prompt included) the repetition penalties look at (`0` = off)"),
)  # fmt: skip
REPEAT_PENALTY = SamplingField(
    "repeat_penalty", "float", limit=ANY, gguf=_GGUF + "penalty_repeat", ollama="repeat_penalty",
    modelfile=True, stages=("penalties",),
    options=_option("repeat-penalty", "float", spellings=("LLAMA_ARG_REPEAT_PENALTY",),
        bound="positive", default="1", help="penalize repeated tokens (`1.0` = off)"),
)  # fmt: skip
PRESENCE_PENALTY = SamplingField(
    "presence_penalty", "float", limit=ANY, ollama="presence_penalty", stages=("penalties",),
    options=_option("presence-penalty", "float", spellings=("LLAMA_ARG_PRESENCE_PENALTY",),
        default="0", help="repeat alpha presence penalty (`0.0` = off)"),
)  # fmt: skip
FREQUENCY_PENALTY = SamplingField(
    "frequency_penalty", "float", limit=ANY, ollama="frequency_penalty", stages=("penalties",),
    options=_option("frequency-penalty", "float", spellings=("LLAMA_ARG_FREQUENCY_PENALTY",),
        default="0", help="repeat alpha frequency penalty (`0.0` = off)"),
)  # fmt: skip
DRY_MULTIPLIER = SamplingField(
    "dry_multiplier", "float", limit=ANY, stages=("dry",),
    options=_option("dry-multiplier", "float", default="0",
        help="DRY repetition penalty multiplier (`0.0` = off)"),
)  # fmt: skip
DRY_BASE = SamplingField(
    "dry_base", "float", limit=ANY, stages=("dry",),
    options=_option("dry-base", "float", default="1.75",
        help="DRY penalty base (below 1.0: ignored)"),
)  # fmt: skip
DRY_ALLOWED_LENGTH = SamplingField(
    "dry_allowed_length", "int", limit=Limit("hard", 0, INT32_MAX), stages=("dry",),
    options=_option("dry-allowed-length", "int", default="2",
        help="DRY: repetitions longer than this are penalized"),
)  # fmt: skip
DRY_PENALTY_LAST_N = SamplingField(
    "dry_penalty_last_n", "int", limit=Limit("hard", 0, INT32_MAX), stages=("dry",),
    options=_option("dry-penalty-last-n", "int", bound="non_negative", default="64",
        help="DRY: how many last tokens to scan (`0` = off)"),
)  # fmt: skip
DRY_SEQUENCE_BREAKERS = SamplingField(
    "dry_sequence_breakers", "other", stages=("dry",),
    options=_option("dry-sequence-breaker", "list",
        help="DRY sequence breakers, repeatable; they replace the defaults (a comma cannot be one "
        "here); `none`: no breakers"),
)  # fmt: skip
MIROSTAT = SamplingField(
    "mirostat", "int", limit=Limit("soft", 0, 2), gguf=_GGUF + "mirostat", stages=("mirostat",),
    options=_option("mirostat", "choice", literals=("0", "1", "2"), default="0",
        help="Mirostat sampling: `0` off, `1` Mirostat, `2` Mirostat 2.0; replaces the samplers "
        "but temperature"),
)  # fmt: skip
MIROSTAT_TAU = SamplingField(
    "mirostat_tau", "float", limit=ANY, gguf=_GGUF + "mirostat_tau", stages=("mirostat",),
    options=_option("mirostat-ent", "float", default="5", help="Mirostat target entropy, tau"),
)  # fmt: skip
MIROSTAT_ETA = SamplingField(
    "mirostat_eta", "float", limit=ANY, gguf=_GGUF + "mirostat_eta", stages=("mirostat",),
    options=_option("mirostat-lr", "float", default="0.1", help="Mirostat learning rate, eta"),
)  # fmt: skip
ADAPTIVE_TARGET = SamplingField(
    "adaptive_target", "float", limit=Limit("soft", -_FLT_MAX, 1.0), stages=("adaptive_p",),
    options=_option("adaptive-target", "float", default="-1",
        help="adaptive-p: select tokens near this probability (`-1.0` = off)"),
)  # fmt: skip
ADAPTIVE_DECAY = SamplingField(
    "adaptive_decay", "float", limit=Limit("hard", 0.0, 0.99), stages=("adaptive_p",),
    options=_option("adaptive-decay", "float", default="0.9",
        help="adaptive-p: decay of the target's adaptation"),
)  # fmt: skip
IGNORE_EOS = SamplingField(
    "ignore_eos", "flag", stages=("logit_bias",),
    options=_option("ignore-eos", "bool", default="false",
        help="never stop at an end-of-generation token (bans them)"),
)  # fmt: skip
LOGIT_BIAS = SamplingField(
    "logit_bias", "other", stages=("logit_bias",),
    options=_option("logit-bias", "list", spellings=("l",),
        help="`TOKEN_ID(+/-)BIAS`, repeatable: biases of every request that gives no `logit_bias` "
        "of its own (a request's replace them, as llama-server's)"),
)  # fmt: skip
# No option: llama-server has no flag for it, a request alone sets it.
MIN_KEEP = SamplingField(
    "min_keep", "int", limit=Limit("hard", 0, INT32_MAX), stages=("top_p", "min_p", "typ_p", "xtc"),
)  # fmt: skip
# Two options: the samplers by name (the field's own), or one letter each.
SAMPLERS = SamplingField(
    "samplers", "other", gguf=_GGUF + "sequence",
    options=_option("samplers", "str",
        help="the samplers in order, separated by `;` (names as a request's `samplers`)")
    + _option("sampler-seq", "str", spellings=("sampling-seq",),
        help="the samplers in order, one letter each (`e` penalties, `d` dry, `s` top-n-sigma, "
        "`k` top-k, `y` typical, `p` top-p, `m` min-p, `x` xtc, `t` temperature)"),
)  # fmt: skip

SAMPLING_FIELDS: tuple[SamplingField, ...] = tuple(
    row for row in globals().values() if isinstance(row, SamplingField)
)  # every row above, in the order written


def sampling_option_rows() -> tuple[OptionSpec, ...]:
    """The option table's rows of the fields' options (worker options, each a request default)."""
    return tuple(option for row in SAMPLING_FIELDS for option in row.options)
