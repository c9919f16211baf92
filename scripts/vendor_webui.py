"""Fetch the Web UI's third-party files from the npm registry into ``webui/assets/vendor/``.

Run with any Python 3.11+ and npm: ``python3 scripts/vendor_webui.py``. Each package is taken
with ``npm pack NAME@VERSION`` (a tarball from the registry; nothing is installed, no scripts
run) into a temporary folder, and the listed files are copied byte for byte. ``manifest.json``
records the package, version, source path and sha256 of every file; the test suite checks the
files against it (``tests/webui/test_vendor_manifest.py``), so an edited vendored file fails CI.

The Web UI has no build step: these are plain ES modules and text files served as they are.
Why these three: ``marked`` renders Markdown, ``highlight.js`` (its prebuilt ES bundle of the
common languages) colours code, and ``DOMPurify`` sanitises the HTML that comes out of both, so
a model's output can never inject markup or script into the page.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
VENDOR_DIR: Final = ROOT / "webui" / "assets" / "vendor"
MANIFEST: Final = VENDOR_DIR / "manifest.json"

# package -> (version, {file inside the package: file name in vendor/})
PACKAGES: Final[dict[str, tuple[str, dict[str, str]]]] = {
    "marked": (
        "18.2.1",
        {"lib/marked.esm.js": "marked.esm.js", "LICENSE": "marked.LICENSE.txt"},
    ),
    "@highlightjs/cdn-assets": (
        "11.12.0",
        {"es/highlight.min.js": "highlight.min.js", "LICENSE": "highlight.LICENSE.txt"},
    ),
    "dompurify": (
        "3.4.18",
        {"dist/purify.es.mjs": "purify.es.mjs", "LICENSE": "purify.LICENSE.txt"},
    ),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pack(package: str, version: str, scratch: Path) -> Path:
    """``npm pack`` the package into ``scratch``; returns the folder it was unpacked into."""
    result = subprocess.run(
        ["npm", "pack", "--silent", f"{package}@{version}", "--pack-destination", str(scratch)],
        check=True,
        capture_output=True,
        text=True,
    )
    tarball = scratch / result.stdout.strip().splitlines()[-1]
    unpacked = scratch / tarball.name.removesuffix(".tgz")
    with tarfile.open(tarball) as archive:
        archive.extractall(unpacked, filter="data")  # "data": no links or paths out of the folder
    return unpacked / "package"


def vendor() -> dict[str, object]:
    VENDOR_DIR.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="corral-vendor-") as tmp:
        for package, (version, wanted) in PACKAGES.items():
            unpacked = _pack(package, version, Path(tmp))
            for source, target in wanted.items():
                shutil.copyfile(unpacked / source, VENDOR_DIR / target)
                files[target] = {
                    "package": package,
                    "version": version,
                    "source": source,
                    "sha256": sha256(VENDOR_DIR / target),
                }
    manifest: dict[str, object] = {
        "comment": "Written by scripts/vendor_webui.py; checked by tests/webui.",
        "files": dict(sorted(files.items())),
    }
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def check() -> list[str]:
    """Differences between the manifest and the files on disk (empty when they match)."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    problems: list[str] = []
    listed = manifest["files"]
    for name, entry in listed.items():
        path = VENDOR_DIR / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif sha256(path) != entry["sha256"]:
            problems.append(f"{name}: sha256 differs from the manifest")
    present = {p.name for p in VENDOR_DIR.iterdir() if p.is_file() and p != MANIFEST}
    problems += [f"{name}: not in the manifest" for name in sorted(present - set(listed))]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only verify files against manifest")
    args = parser.parse_args()
    if args.check:
        problems = check()
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    manifest = vendor()
    files = manifest["files"]
    assert isinstance(files, dict)
    for name, entry in files.items():
        print(f"{name:24} {entry['package']}@{entry['version']} {entry['sha256'][:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
