"""config/corral.service: valid for systemd, hardened, and consistent with how Corral stops."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from router.catalogue.catalogue import DEFAULT_STOP_TIMEOUT
from router.catalogue.presets import load_preset_file

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "config" / "corral.service"
INSTALLED_CORRAL = "/opt/corral/.venv/bin/corral"
# uvicorn's graceful shutdown (router/server.py) runs before the workers are stopped.
UVICORN_GRACE_SECONDS = 5


def _settings() -> list[tuple[str, str, str]]:
    """(section, key, value) for every assignment, in order; keys may repeat."""
    found: list[tuple[str, str, str]] = []
    section = ""
    for line in UNIT.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        if header := re.fullmatch(r"\[(\w+)\]", line.strip()):
            section = header[1]
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not an assignment: {line!r}"
        found.append((section, key.strip(), value.strip()))
    return found


def _values(key: str, section: str = "Service") -> list[str]:
    return [value for s, k, value in _settings() if s == section and k == key]


def _one(key: str, section: str = "Service") -> str:
    values = _values(key, section)
    assert len(values) == 1, f"{key}= is set {len(values)} times"
    return values[0]


def _environment() -> dict[str, str]:
    return dict(value.split("=", 1) for value in _values("Environment"))


def _systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("systemd-analyze is missing: .ci/run installs the systemd package")
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    return tool


def _unit_with_real_executable(tmp_path: Path) -> Path:
    # verify checks that ExecStart= exists: point it at this checkout's corral instead of
    # /opt/corral's, changing nothing else.
    corral = ROOT / ".venv" / "bin" / "corral"
    assert corral.is_file(), "run scripts/bootstrap.py first"
    text = UNIT.read_text(encoding="utf-8")
    assert INSTALLED_CORRAL in text
    copy = tmp_path / "corral.service"
    copy.write_text(text.replace(INSTALLED_CORRAL, str(corral)), encoding="utf-8")
    return copy


def test_systemd_analyze_verify_finds_nothing(tmp_path: Path) -> None:
    tool = _systemd_analyze()
    result = subprocess.run(
        [tool, "verify", str(_unit_with_real_executable(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Unknown keys and bad values are only warnings (exit 0), so any output fails the test.
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""


def test_systemd_analyze_verify_would_catch_a_typo(tmp_path: Path) -> None:
    tool = _systemd_analyze()
    unit = _unit_with_real_executable(tmp_path)
    unit.write_text(unit.read_text().replace("KillMode=mixed", "KillMood=mixed"))
    result = subprocess.run(
        [tool, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert "Unknown key 'KillMood'" in result.stderr


def test_exposure_is_low(tmp_path: Path) -> None:
    tool = _systemd_analyze()
    result = subprocess.run(
        [
            tool,
            "security",
            "--offline=yes",
            "--threshold=20",
            str(_unit_with_real_executable(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr


def test_runs_corral_serve_as_a_dedicated_user() -> None:
    assert _one("ExecStart") == f"{INSTALLED_CORRAL} serve"
    assert _one("User") == _one("Group") == "corral"
    sysusers = (ROOT / "config" / "corral.sysusers").read_text(encoding="utf-8")
    assert re.search(r"^u corral - .* /var/lib/corral ", sysusers, re.M)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("CapabilityBoundingSet", ""),
        ("Restart", "on-failure"),
        ("KillMode", "mixed"),
        ("KillSignal", "SIGTERM"),
        ("EnvironmentFile", "-/etc/corral/corral.env"),
    ],
)
def test_setting(key: str, value: str) -> None:
    assert _one(key) == value


def test_reload_is_sighup() -> None:
    assert _one("ExecReload") == "/bin/kill -HUP $MAINPID"


def test_stop_timeout_outlasts_the_routers_own_escalation() -> None:
    # The router sends the exit command, then SIGTERM after stop-timeout, then SIGKILL after
    # stop-timeout again; systemd must not SIGKILL the cgroup before that has run its course,
    # for the default and for the longest stop-timeout the example presets use.
    example = load_preset_file(ROOT / "config" / "models.example.ini")
    timeouts = [DEFAULT_STOP_TIMEOUT, float(example.defaults.get("stop-timeout", 0))]
    timeouts += [float(s.options.get("stop-timeout", 0)) for s in example.sections.values()]
    longest = max(timeouts)
    assert longest >= 30
    assert float(_one("TimeoutStopSec")) > UVICORN_GRACE_SECONDS + 2 * longest


def test_writable_paths_are_the_units_own_directories() -> None:
    env = _environment()
    state = [f"/var/lib/{d}" for d in " ".join(_values("StateDirectory")).split()]
    cache = [f"/var/cache/{d}" for d in " ".join(_values("CacheDirectory")).split()]
    # ProtectSystem=strict: the router can write only there, so the cache and the models
    # directory must be among them (and exist: systemd creates them).
    assert env["HF_HUB_CACHE"] in cache
    assert env["LLAMA_ARG_MODELS_DIR"] in state
    assert env["HF_HOME"].startswith(cache[0] + "/")
    assert _one("WorkingDirectory") == env["HOME"] == state[0]
    assert _values("ReadWritePaths") == []


def test_environment_names_are_documented() -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name in _environment():
        assert f"| `{name}` |" in reference, name
