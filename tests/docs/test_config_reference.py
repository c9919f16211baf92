"""docs/configuration.md: generated from the parsers and OPTIONS, and true of the code."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from corral.children.environment import ROUTER_PID_ENV
from corral.hub.cache_layout import CACHE_DIR_VARIABLES
from corral.options.flags import WORKER_OPTIONS
from corral.options.table import OPTIONS
from router.cli.main import parse_serve_args
from router.security.api_keys import ApiKey, KeyScope
from router.tools.mcp.mcp_config import McpServerConfig
from scripts import gen_config_docs
from tests.support.tls import self_signed

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "configuration.md"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No LLAMA_*/HF_* variables from the developer's shell."""
    for name in list(os.environ):
        if name.startswith(("LLAMA_", "HF_", "HUGGING", "CORRAL_")):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.fixture(scope="module")
def reference() -> str:
    return REFERENCE.read_text(encoding="utf-8")


def _documented(text: str, spelling: str) -> bool:
    # As a code span on its own or followed by its placeholder: `--port PORT`, `--mlock`.
    return re.search(rf"`{re.escape(spelling)}[` ]", text) is not None


def test_reference_is_what_the_generator_renders(reference: str) -> None:
    assert reference == gen_config_docs.render(), (
        "docs/configuration.md is stale: run .venv/bin/python scripts/gen_config_docs.py"
    )


@pytest.mark.parametrize("variable", ["LLAMA_ARG_PORT", "CORRAL_MAX_QUEUE"])
def test_the_reference_does_not_depend_on_the_shells_variables(
    reference: str, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "7")  # a default the parser would take from it
    assert reference == gen_config_docs.render()


def test_check_mode_fails_on_a_stale_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setattr(gen_config_docs, "TARGET", stale)
    assert gen_config_docs.main(["--check"]) == 1
    assert gen_config_docs.main([]) == 0
    assert gen_config_docs.main(["--check"]) == 0


def test_every_corral_serve_flag_is_documented(reference: str) -> None:
    flags = gen_config_docs.option_strings(gen_config_docs.serve_parser())
    assert {"--host", "--models-preset", "-ngl", "--no-mmap", "--no-models-autoload"} <= flags
    missing = sorted(flag for flag in flags if not _documented(reference, flag))
    assert not missing, f"corral serve flags missing from docs/configuration.md: {missing}"


def test_every_worker_flag_is_documented(reference: str) -> None:
    flags = gen_config_docs.option_strings(gen_config_docs.worker_parser())
    assert {"--model", "--alias", "--port", "--ctx-size", "--no-webui"} <= flags
    missing = sorted(flag for flag in flags if not _documented(reference, flag))
    assert not missing, f"python -m worker flags missing from docs/configuration.md: {missing}"


def test_every_preset_key_and_spelling_is_documented(reference: str) -> None:
    section = reference.split("## Preset keys", 1)[1]
    for spec in OPTIONS:
        for key in (spec.name, *spec.spellings, *spec.negatives):
            assert f"`{key}`" in section, f"preset key '{key}' ({spec.name}) is not documented"


def test_a_missing_description_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    undescribed = [replace(s, help="") if s.name == "ttl" else s for s in OPTIONS]
    monkeypatch.setattr(gen_config_docs, "OPTIONS", tuple(undescribed))
    with pytest.raises(SystemExit, match="'ttl' has no description"):
        gen_config_docs.render()
    monkeypatch.undo()
    monkeypatch.delitem(gen_config_docs.SERVE_FLAG_HELP, "offline")
    with pytest.raises(SystemExit, match="--offline"):
        gen_config_docs.render()


_ENV_READ = re.compile(
    r"(?:environ\.get\(|environ\[|\b_env\(|\b_env_bool\(|\benv\.get\(|_flag_or_env\([^,()]+,\s*)"
    r"\"([A-Z][A-Z0-9_]+)\""
)


def _variables_read_by_the_code() -> set[str]:
    names: set[str] = set()
    sources = [*ROOT.glob("router/**/*.py"), *ROOT.glob("worker/**/*.py")]
    sources += [*ROOT.glob("downloads/**/*.py"), ROOT / "scripts" / "bootstrap.py"]
    for path in sources:
        names |= set(_ENV_READ.findall(path.read_text(encoding="utf-8")))
    names |= {name for name, _ in CACHE_DIR_VARIABLES}
    names.add(ROUTER_PID_ENV)
    for spec in WORKER_OPTIONS:
        names |= {s for s in spec.spellings if s.startswith("LLAMA_ARG_")}
    return names


def test_every_variable_the_code_reads_is_documented(reference: str) -> None:
    read = _variables_read_by_the_code()
    assert {"LLAMA_ARG_HOST", "HF_TOKEN", "CORRAL_STREAM_TTL_SECONDS", "LLAMA_CACHE"} <= read
    section = reference.split("## Environment variables", 1)[1]
    missing = sorted(name for name in read if f"| `{name}` |" not in section)
    assert not missing, f"variables missing from docs/configuration.md: {missing}"


# A sample value for each variable the reference says `corral serve` reads, and where it lands.
_SERVE_VARIABLES: dict[str, tuple[str, str, object]] = {
    "LLAMA_ARG_HOST": ("0.0.0.0", "host", "0.0.0.0"),
    "LLAMA_ARG_PORT": ("9123", "port", 9123),
    "LLAMA_ARG_MODELS_MAX": ("7", "models_max", 7),
    "LLAMA_ARG_MODELS_AUTOLOAD": ("off", "models_autoload", False),
    "LLAMA_API_KEY": ("k1,k2", "api_keys", (ApiKey("k1"), ApiKey("k2"))),
    "LLAMA_ARG_CORS_ORIGINS": ("localhost", "cors_origins", ("localhost",)),
    "CORRAL_ALLOWED_HOSTS": ("llm.example,gpu.lan", "allowed_hosts", ("llm.example", "gpu.lan")),
    "CORRAL_CLUSTER": ("ray://10.0.0.1:6379", "cluster", "10.0.0.1:6379"),
    "LLAMA_ARG_HF_REPO": ("acme/x-GGUF:Q8_0", "hf_repos", ("acme/x-GGUF:Q8_0",)),
    "LLAMA_ARG_TIMEOUT": ("12", "timeout", 12.0),
    "LLAMA_ARG_ALIAS": ("a,b", "aliases", ("a", "b")),
    "LLAMA_ARG_TAGS": ("t", "tags", ("t",)),
    "LLAMA_ARG_OFFLINE": ("1", "offline", True),
    "CORRAL_MODELS_MEMORY_MAX": ("2G", "models_memory_max", 2 << 30),
    "CORRAL_MODELS_SPARE": ("2", "models_spare", 2),
    "CORRAL_MAX_BODY": ("1M", "max_body", 1 << 20),
    "CORRAL_MAX_CONNECTIONS": ("64", "max_connections", 64),
    "CORRAL_CACHE_SHARE": ("1", "cache_share", True),
    "CORRAL_STALL_TIMEOUT": ("5", "stall_timeout", 5.0),
    "CORRAL_LOAD_TIMEOUT": ("0", "load_timeout", 0.0),
    "CORRAL_MAX_QUEUE": ("3", "max_queue", 3),
    "CORRAL_SCHEDULE": ("fifo", "schedule", "fifo"),
    "CORRAL_SCHEDULE_WAIT_MAX": ("12.5", "schedule_wait_max", 12.5),
    "CORRAL_SCHEDULE_KEEP_IDLE": ("2.5", "schedule_keep_idle", 2.5),
    "HF_TOKEN": ("hf_abc", "hf_token", "hf_abc"),
    "CORRAL_LOG_FORMAT": ("json", "log_format", "json"),
    "CORRAL_LOG_REQUESTS": ("no", "log_requests", False),
    "LLAMA_ARG_LOG_VERBOSITY": ("4", "log_verbosity", 4),
    "OTEL_EXPORTER_OTLP_ENDPOINT": ("http://c:4318", "otel_endpoint", "http://c:4318"),
    "LLAMA_ARG_MMPROJ": ("/m/mmproj.gguf", "mmproj_file", Path("/m/mmproj.gguf")),
    "LLAMA_ARG_MMPROJ_AUTO": ("off", "model_options", {"mmproj-auto": "false"}),
    "LLAMA_ARG_TOOLS": ("read_file,get_info", "tools", ("read_file", "get_info")),
    "CORRAL_TOOLS_ALLOW_EXEC": ("1", "tools_allow_exec", True),
    "LLAMA_ARG_MCP_SERVERS_JSON": (
        '{"mcpServers": {"s": {"command": "srv"}}}',
        "mcp_servers",
        (McpServerConfig("s", "srv"),),
    ),
    "LLAMA_ARG_UI_MCP_PROXY": ("1", "ui_mcp_proxy", True),
    "CORRAL_UI_MCP_PROXY_PRIVATE": ("1", "ui_mcp_proxy_private", True),
    "LLAMA_ARG_API_PREFIX": ("/v2", "api_prefix", "/v2"),
    "LLAMA_ARG_REUSE_PORT": ("1", "reuse_port", True),
}


def test_documented_serve_variables_really_set_their_flags(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# comment\nk3 inference rpm=5\n", encoding="utf-8")
    preset = tmp_path / "models.ini"
    preset.write_text("[*]\nctx-size = 1024\n", encoding="utf-8")
    mcp = tmp_path / "mcp.json"
    mcp.write_text('{"mcpServers": {"f": {"command": "srv", "args": ["-x"]}}}', encoding="utf-8")
    samples = {
        **_SERVE_VARIABLES,
        "LLAMA_ARG_MODELS_DIR": (str(tmp_path), "models_dir", tmp_path),
        "LLAMA_ARG_MODELS_PRESET": (str(preset), "models_preset", preset),
        "CORRAL_TOOLS_ROOT": (str(tmp_path), "tools_root", tmp_path),
        "LLAMA_ARG_MCP_SERVERS_CONFIG": (
            str(mcp),
            "mcp_servers",
            (McpServerConfig("f", "srv", ("-x",)),),
        ),
        "LLAMA_ARG_API_KEY_FILE": (
            str(keys),
            "api_keys",
            (ApiKey("k3", KeyScope.INFERENCE, rpm=5),),
        ),
    }
    key, cert = self_signed(tmp_path)
    samples |= {
        "LLAMA_ARG_STATIC_PATH": (str(tmp_path), "static_path", tmp_path),
        "LLAMA_ARG_SSL_KEY_FILE": (str(key), "ssl_key_file", key),
        "LLAMA_ARG_SSL_CERT_FILE": (str(cert), "ssl_cert_file", cert),
    }
    # Variables only valid with another (TLS's key and certificate): set together.
    partners = {"LLAMA_ARG_SSL_KEY_FILE": "LLAMA_ARG_SSL_CERT_FILE"}
    partners |= {second: first for first, second in partners.items()}
    documented = {env for env, _ in gen_config_docs.SERVE_FLAG_HELP.values() if env}
    assert documented == set(samples), "a documented variable has no sample here, or vice versa"
    for name, (value, field, expected) in samples.items():
        with clean_env.context() as patch:
            patch.setenv(name, value)
            if name in partners:
                patch.setenv(partners[name], samples[partners[name]][0])
            settings = parse_serve_args([])
        assert getattr(settings, field) == expected, name


def test_documented_model_variables_really_set_every_models_options(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ui_config = tmp_path / "ui.json"
    ui_config.write_text("{}")
    # Text options whose text is checked when the router starts.
    by_name = {"ui-config": "{}", "ui-config-file": str(ui_config)}
    samples = {
        "int": "3",
        "float": "0.5",
        "str": "chatml",
        "bool": "on",
        "switch": "off",
        "choice": "",
        "choices": "",
        "list": "10.0.0.2:50052",
        "on-off": "off",
        "numbers": "3,1",
    }
    for spec in WORKER_OPTIONS:
        env = next((s for s in spec.spellings if s.startswith("LLAMA_ARG_")), None)
        if env is None:
            continue
        value = by_name.get(spec.name) or samples[spec.kind] or spec.literals[0]
        with clean_env.context() as patch:
            patch.setenv(env, value)
            options = parse_serve_args([]).model_options
        assert spec.name in options, f"{env} did not set {spec.name}"
