"""scripts/gen_llama_server_flags.py's reading of arg.cpp, and what it rewrites of the table."""

from __future__ import annotations

from corral.options import llama_server_flags
from scripts.gen_llama_server_flags import _rewritten, server_flags

# Shaped as llama.cpp's common/arg.cpp writes its options.
_ARG_CPP = """
    add_opt(common_arg(
        {"--perf"},
        {"--no-perf"},
        string_format("timings (default: %s)", params.no_perf ? "true" : "false"),
        [](common_params & params, bool value) { params.no_perf = !value; }  // {"--not-this"}
    ).set_env("LLAMA_ARG_PERF"));
    add_opt(common_arg(
        {"--temp", "--temperature"}, "N",
        string_format("temperature (default: %.2f)", (double)params.sampling.temp),
        [](common_params & params, const std::string & value) { params.sampling.temp = 1; }
    ).set_sampling().set_env("LLAMA_ARG_TEMPERATURE"));
    add_opt(common_arg(
        {"--control-vector-layer-range"}, "START", "END",
        "layer range",
        [](common_params & params, const std::string & a, const std::string & b) {}
    ));
    add_opt(common_arg(
        {"-Crbd"}, "lo-hi", "draft range",
        [](common_params & params, const std::string & value) {}
    ).set_examples({LLAMA_EXAMPLE_SPECULATIVE}));
    add_opt(common_arg(
        {"-p", "--prompt"}, "PROMPT", "prompt",
        [](common_params & params, const std::string & value) {}
    ).set_excludes({LLAMA_EXAMPLE_SERVER}));
"""


def test_each_server_option_is_one_line() -> None:
    assert server_flags(_ARG_CPP) == [
        "0 LLAMA_ARG_PERF - --perf / --no-perf",
        "1 LLAMA_ARG_TEMPERATURE sampling --temp --temperature",
        "2 - - --control-vector-layer-range",
    ]


def test_a_line_reads_back_as_its_flag() -> None:
    flag = llama_server_flags._flag("0", "LLAMA_ARG_PERF", "-", "--perf", "/", "--no-perf")
    assert flag == llama_server_flags.LlamaServerFlag(
        0, "LLAMA_ARG_PERF", ("--perf", "--no-perf"), ("--no-perf",), False
    )


def test_only_the_version_commit_and_table_are_rewritten() -> None:
    with open(llama_server_flags.__file__, encoding="utf-8") as module:
        text = module.read()
    rewritten = _rewritten(text, "9.9.9", "f" * 40, ["1 - - --x", "0 - - --y\\z"])
    assert 'LLAMA_CPP_PYTHON_VERSION = "9.9.9"' in rewritten
    assert f'LLAMA_CPP_COMMIT = "{"f" * 40}"' in rewritten
    assert '_FLAGS = """\n1 - - --x\n0 - - --y\\z\n"""' in rewritten
    # Written back, the module is as it was: the rest of it is left alone.
    lines = llama_server_flags._FLAGS.strip().splitlines()
    version, commit = (
        llama_server_flags.LLAMA_CPP_PYTHON_VERSION,
        llama_server_flags.LLAMA_CPP_COMMIT,
    )
    assert _rewritten(rewritten, version, commit, lines) == text
