"""A built wheel is a working Corral: the packages, the Web UI's files, and the `corral` script.

The rest of the suite runs the editable install, which would serve files from the checkout even
if the wheel left them out. Here a wheel is built from a copy of the sources, installed into a
fresh virtual environment, and started from a directory outside the checkout, so only what the
wheel carries can answer.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import running_router

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("corral", "router", "worker", "downloads", "webui")
WEBUI = ROOT / "webui"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def _pip(*args: str | Path) -> None:
    # The project venv's pip; the fresh venv is made without one, which is quicker.
    subprocess.run([sys.executable, "-m", "pip", "-q", *map(str, args)], check=True)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("packaging")
    # A copy, so the build's scratch files (build/, *.egg-info) never land in the checkout and
    # nothing left there from an earlier layout can slip into the wheel.
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    _pip("wheel", "--no-deps", "-w", work / "wheels", source)
    (wheel,) = (work / "wheels").glob("corral-*.whl")

    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    _pip("--python", venv / "bin" / "python", "install", "--no-deps", "--no-index", wheel)
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": venv, "platbase": venv}))
    # The dependencies come from the project's venv, appended after the fresh venv's own
    # site-packages. A path line adds only that folder: the editable install's .pth hook there
    # is not run, so the checkout's packages stay out of reach.
    (site_packages / "corral-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return Installed(wheel, venv, site_packages)


def test_the_wheel_carries_the_packages_and_every_web_ui_file(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    webui_files = {
        path.relative_to(ROOT).as_posix()
        for path in WEBUI.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert "webui/index.html" in webui_files
    assert webui_files <= names
    assert {f"{package}/__init__.py" for package in PACKAGES} <= names


def test_the_installed_packages_are_the_wheels_not_the_checkouts(
    installed: Installed, tmp_path: Path
) -> None:
    script = "import corral, router, worker, downloads, router.api.webui as w; print(w.WEBUI_DIR)"
    found = subprocess.run(
        [installed.python, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert Path(found.stdout.strip()) == installed.site_packages / "webui"


def test_the_installed_router_serves_the_web_ui(installed: Installed, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    write_tiny_gguf(models / "alpha.gguf", name="alpha")
    command = [str(installed.venv / "bin" / "corral")]
    with running_router(["--models-dir", str(models)], command=command, cwd=tmp_path) as router:
        page = router.client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.content == (WEBUI / "index.html").read_bytes()
        script = router.client.get("/assets/js/main.js")
        assert script.status_code == 200
        assert script.content == (WEBUI / "assets" / "js" / "main.js").read_bytes()
