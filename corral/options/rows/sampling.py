"""Sampling (issue 27): llama-server's sampling flags (common/arg.cpp), each a request default.

Kept together, one block: the sampling fields' table is to generate them.
"""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "temp",
        "float",
        spellings=("temperature", "LLAMA_ARG_TEMPERATURE"),
        bound="non_negative",
        default="0.8",
        help="default temperature",
    ),
    OptionSpec(
        "seed",
        "int",
        spellings=("s",),
        default="-1",
        help="default seed; `-1` = random",
    ),
    OptionSpec(
        "top-k",
        "int",
        spellings=("LLAMA_ARG_TOP_K",),
        default="40",
        help="top-k sampling: keep the K likeliest tokens (`0` = off)",
    ),
    OptionSpec(
        "top-p",
        "float",
        spellings=("LLAMA_ARG_TOP_P",),
        default="0.95",
        help="top-p (nucleus) sampling (`1.0` = off)",
    ),
    OptionSpec(
        "min-p",
        "float",
        spellings=("LLAMA_ARG_MIN_P",),
        default="0.05",
        help="min-p sampling, relative to the likeliest token (`0.0` = off)",
    ),
    OptionSpec(
        "typical",
        "float",
        spellings=("typical-p",),
        default="1",
        help="locally typical sampling, parameter p (`1.0` = off)",
    ),
    OptionSpec(
        "top-nsigma",
        "float",
        spellings=("top-n-sigma",),
        default="-1",
        help="top-n-sigma sampling (`-1.0` = off)",
    ),
    OptionSpec(
        "xtc-probability",
        "float",
        default="0",
        help="XTC: chance of removing the top tokens (`0.0` = off)",
    ),
    OptionSpec(
        "xtc-threshold",
        "float",
        default="0.1",
        help="XTC: probability above which tokens are removed (above 0.5 = off)",
    ),
    OptionSpec(
        "repeat-last-n",
        "int",
        bound="non_negative",
        default="64",
        help="last n tokens (prompt included) the repetition penalties look at (`0` = off)",
    ),
    OptionSpec(
        "repeat-penalty",
        "float",
        spellings=("LLAMA_ARG_REPEAT_PENALTY",),
        bound="positive",
        default="1",
        help="penalize repeated tokens (`1.0` = off)",
    ),
    OptionSpec(
        "presence-penalty",
        "float",
        spellings=("LLAMA_ARG_PRESENCE_PENALTY",),
        default="0",
        help="repeat alpha presence penalty (`0.0` = off)",
    ),
    OptionSpec(
        "frequency-penalty",
        "float",
        spellings=("LLAMA_ARG_FREQUENCY_PENALTY",),
        default="0",
        help="repeat alpha frequency penalty (`0.0` = off)",
    ),
    OptionSpec(
        "dry-multiplier",
        "float",
        default="0",
        help="DRY repetition penalty multiplier (`0.0` = off)",
    ),
    OptionSpec(
        "dry-base",
        "float",
        default="1.75",
        help="DRY penalty base (below 1.0: ignored)",
    ),
    OptionSpec(
        "dry-allowed-length",
        "int",
        default="2",
        help="DRY: repetitions longer than this are penalized",
    ),
    OptionSpec(
        "dry-penalty-last-n",
        "int",
        bound="non_negative",
        default="64",
        help="DRY: how many last tokens to scan (`0` = off)",
    ),
    OptionSpec(
        "dry-sequence-breaker",
        "list",
        help="DRY sequence breakers, repeatable; they replace the defaults (a comma cannot be "
        "one here); `none`: no breakers",
    ),
    OptionSpec(
        "dynatemp-range",
        "float",
        default="0",
        help="dynamic temperature range (`0.0` = off)",
    ),
    OptionSpec(
        "dynatemp-exp",
        "float",
        default="1",
        help="dynamic temperature exponent",
    ),
    OptionSpec(
        "mirostat",
        "choice",
        literals=("0", "1", "2"),
        default="0",
        help="Mirostat sampling: `0` off, `1` Mirostat, `2` Mirostat 2.0; replaces the samplers "
        "but temperature",
    ),
    OptionSpec(
        "mirostat-lr",
        "float",
        default="0.1",
        help="Mirostat learning rate, eta",
    ),
    OptionSpec(
        "mirostat-ent",
        "float",
        default="5",
        help="Mirostat target entropy, tau",
    ),
    OptionSpec(
        "adaptive-target",
        "float",
        default="-1",
        help="adaptive-p: select tokens near this probability (`-1.0` = off)",
    ),
    OptionSpec(
        "adaptive-decay",
        "float",
        default="0.9",
        help="adaptive-p: decay of the target's adaptation",
    ),
    OptionSpec(
        "samplers",
        "str",
        help="the samplers in order, separated by `;` (names as a request's `samplers`)",
    ),
    OptionSpec(
        "sampler-seq",
        "str",
        spellings=("sampling-seq",),
        help="the samplers in order, one letter each (`e` penalties, `d` dry, `s` top-n-sigma, "
        "`k` top-k, `y` typical, `p` top-p, `m` min-p, `x` xtc, `t` temperature)",
    ),
    OptionSpec(
        "ignore-eos",
        "bool",
        default="false",
        help="never stop at an end-of-generation token (bans them)",
    ),
)
