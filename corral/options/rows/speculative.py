"""Speculative decoding: the draft model and the n-gram types' settings."""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS", "SPEC_TYPES"]

# Every type llama-server's --spec-type knows (common/speculative.cpp); the worker runs some of
# them and refuses the others when it loads (docs/serving.md, speculative decoding).
SPEC_TYPES = (
    "none",
    "draft-simple",
    "draft-eagle3",
    "draft-mtp",
    "draft-dflash",
    "draft-dspark",
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-mod",
    "ngram-cache",
)

ROWS: tuple[OptionSpec, ...] = (
    # Speculative decoding. The router turns spec-draft-hf and relative model-draft paths into
    # an absolute model-draft before a worker sees them (router/catalogue/draft_models.py).
    OptionSpec(
        "model-draft",
        "str",
        spellings=("md", "spec-draft-model", "LLAMA_ARG_SPEC_DRAFT_MODEL"),
        help="draft model GGUF for speculative decoding (relative paths in a preset: to the INI "
        "file); with `spec-draft-hf`, the file inside that repository",
    ),
    OptionSpec(
        "spec-draft-hf",
        "str",
        dest="speculative.draft_hf",
        spellings=("hfd", "hfrd", "hf-repo-draft", "LLAMA_ARG_SPEC_DRAFT_HF_REPO"),
        help="draft model from the hub cache, `org/repo[:TAG]` (must be downloaded already)",
    ),
    OptionSpec(
        "spec-type",
        "choices",
        spellings=("LLAMA_ARG_SPEC_TYPE",),
        literals=SPEC_TYPES,
        help="speculative decoding types, comma-separated: `draft-simple` (a draft model, the "
        "default when one is given), `ngram-simple` (prompt lookup), `ngram-map-k`, "
        "`ngram-map-k4v`, `ngram-mod` and `ngram-cache` run; the other `draft-*` types "
        "fail the load",
    ),
    # --draft, --draft-max and --draft-min are older llama-servers' names, which the current one
    # refuses as removed; Corral keeps them as aliases so old command lines still work.
    OptionSpec(
        "spec-draft-n-max",
        "int",
        dest="speculative.n_max",
        spellings=("draft", "draft-n", "draft-max", "LLAMA_ARG_SPEC_DRAFT_N_MAX"),
        bound="non_negative",
        default="3",
        help="most tokens guessed per step",
    ),
    OptionSpec(
        "spec-draft-n-min",
        "int",
        dest="speculative.n_min",
        spellings=("draft-min", "draft-n-min", "LLAMA_ARG_SPEC_DRAFT_N_MIN"),
        bound="non_negative",
        default="0",
        help="fewest tokens a draft model's guess may have to be tried",
    ),
    OptionSpec(
        "spec-draft-p-min",
        "float",
        dest="speculative.p_min",
        spellings=("draft-p-min", "LLAMA_ARG_SPEC_DRAFT_P_MIN"),
        bound="non_negative",
        default="0",
        help="a draft model guesses only while its top candidate's probability is at least this",
    ),
    OptionSpec(
        "ctx-size-draft",
        "int",
        dest="speculative.ctx_size_draft",
        spellings=("cd", "LLAMA_ARG_CTX_SIZE_DRAFT"),
        bound="non_negative",
        default="0",
        help="the draft model's context size; `0` = the model's own `ctx-size`",
    ),
    OptionSpec(
        "spec-draft-ngl",
        "int",
        spellings=(
            "ngld",
            "gpu-layers-draft",
            "n-gpu-layers-draft",
            "LLAMA_ARG_N_GPU_LAYERS_DRAFT",
        ),
        literals=("auto", "all"),
        default="auto",
        help="draft model layers offloaded to the GPU of a GPU build; `auto`/`all` = every layer",
    ),
    OptionSpec(
        "spec-draft-threads",
        "int",
        dest="speculative.threads_draft",
        spellings=("td", "threads-draft"),
        bound="positive",
        help="CPU threads of the draft model; default: the model's",
    ),
    OptionSpec(
        "spec-ngram-simple-size-n",
        "int",
        dest="speculative.ngram_size_n",
        bound="positive",
        default="12",
        help="`ngram-simple`: tokens looked up in the history",
    ),
    OptionSpec(
        "spec-synth-len",
        "float",
        dest="speculative.synth_len",
        spellings=("LLAMA_ARG_SPEC_SYNTH_LEN",),
        help="benchmarks only: keep guesses at random for this mean accepted length (counting "
        "the sampled token) instead of checking them; the text is not the model's",
    ),
    OptionSpec(
        "spec-synth-rates",
        "str",
        dest="speculative.synth_rates",
        spellings=("LLAMA_ARG_SPEC_SYNTH_RATES",),
        help="benchmarks only: keep guesses at random, at these comma-separated rates per "
        "position (one per `spec-draft-n-max`, not increasing)",
    ),
    OptionSpec(
        "spec-ngram-simple-size-m",
        "int",
        dest="speculative.ngram_size_m",
        bound="positive",
        default="48",
        help="`ngram-simple`: most tokens guessed from a match",
    ),
    # --spec-type ngram-mod's settings (issue 29); at most 1024 each, checked at load.
    OptionSpec(
        "spec-ngram-mod-n-match",
        "int",
        dest="speculative.mod_n_match",
        bound="positive",
        default="24",
        help="`ngram-mod`: tokens hashed to look up the next one (0-1024)",
    ),
    OptionSpec(
        "spec-ngram-mod-n-max",
        "int",
        dest="speculative.mod_n_max",
        bound="non_negative",
        default="64",
        help="`ngram-mod`: most tokens guessed (0-1024)",
    ),
    OptionSpec(
        "spec-ngram-mod-n-min",
        "int",
        dest="speculative.mod_n_min",
        bound="non_negative",
        default="48",
        help="`ngram-mod`: fewest tokens guessed; a shorter guess is dropped (0-1024)",
    ),
    # llama-server's "default speculative decoding config": ngram-mod added to --spec-type.
    OptionSpec(
        "spec-default",
        "bool",
        default="false",
        help="llama-server's default speculative decoding: `ngram-mod` added to `spec-type` "
        "(with its default settings unless `spec-ngram-mod-*` are given)",
    ),
    # --spec-type ngram-cache's lookup cache files (llama.cpp's llama-lookup-create makes them).
    OptionSpec(
        "lookup-cache-static",
        "str",
        spellings=("lcs",),
        help="`ngram-cache`: a static lookup cache file (2-gram counts, as llama.cpp's "
        "`llama-lookup-create` writes them); read when the model loads",
    ),
    OptionSpec(
        "lookup-cache-dynamic",
        "str",
        spellings=("lcd",),
        help="`ngram-cache`: a dynamic lookup cache file (1- to 4-gram counts); read when the "
        "model loads, never written",
    ),
    # --spec-type ngram-map-k and ngram-map-k4v's settings (issue 29); sizes at most 1024.
    OptionSpec(
        "spec-ngram-map-k-size-n",
        "int",
        bound="positive",
        default="12",
        help="`ngram-map-k`: tokens looked up in the history (1-1024)",
    ),
    OptionSpec(
        "spec-ngram-map-k-size-m",
        "int",
        bound="positive",
        default="48",
        help="`ngram-map-k`: most tokens guessed from a match (1-1024)",
    ),
    OptionSpec(
        "spec-ngram-map-k-min-hits",
        "int",
        bound="positive",
        default="1",
        help="read by llama-server for `ngram-map-k` too, which guesses by key only and never "
        "looks at it",
    ),
    OptionSpec(
        "spec-ngram-map-k4v-size-n",
        "int",
        bound="positive",
        default="12",
        help="`ngram-map-k4v`: tokens looked up in the history (1-1024)",
    ),
    OptionSpec(
        "spec-ngram-map-k4v-size-m",
        "int",
        bound="positive",
        default="48",
        help="`ngram-map-k4v`: tokens of each m-gram counted and guessed (1-1024)",
    ),
    OptionSpec(
        "spec-ngram-map-k4v-min-hits",
        "int",
        bound="positive",
        default="1",
        help="`ngram-map-k4v`: times a key must be seen before it guesses",
    ),
)
