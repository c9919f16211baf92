"""The pages under docs/: every router route is in the API reference, every link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from router.app import create_app
from router.settings import ServeSettings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [
    "quickstart",
    "configuration",
    "api",
    "operations",
    "migrating",
    "architecture",
    "protocol",
    "serving",
    "webui",
    "tools",
    "development",
    "benchmarks",
    "benchmarks/log",
    "scaling",
    "llama-server-tests",
    "security",
]


def _documented_prefix(path: str) -> str:
    # "/assets/{path:path}" is documented as "/assets/…"; Litestar's many "/schema/…" routes
    # as "/schema".
    prefix = path.split("{", 1)[0]
    return "/schema" if prefix.startswith("/schema") else prefix


def test_every_route_of_the_router_is_in_the_api_reference(tmp_path: Path) -> None:
    app = create_app(ServeSettings(models_dir=tmp_path))
    api = (DOCS / "api.md").read_text(encoding="utf-8")
    paths = {route.path for route in app.routes}
    assert {"/v1/chat/completions", "/models/sse", "/v1/stream"} <= paths
    missing = sorted(p for p in paths if f"`{_documented_prefix(p)}" not in api.replace("$B", ""))
    missing = [p for p in missing if f" {_documented_prefix(p)}`" not in api]
    assert not missing, f"routes missing from docs/api.md: {missing}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def _links_section(page: Path) -> str:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    if page.name == "README.md":  # only its Documentation section is this suite's business
        text = text.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    return text


@pytest.mark.parametrize("page", [*(DOCS / f"{name}.md" for name in PAGES), ROOT / "README.md"])
def test_links_resolve(page: Path) -> None:
    assert page.is_file(), page
    text = _links_section(page)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        assert linked.exists(), f"{page.name}: broken link {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{page.name}: no heading for #{anchor} in {linked}"


def test_protocol_citations_name_sections_that_exist() -> None:
    # Code comments cite the contract as "docs/protocol.md §n" (and "§n, §m"); a renumbered or
    # missing section would leave them pointing nowhere.
    protocol = (DOCS / "protocol.md").read_text(encoding="utf-8")
    sections = {int(n) for n in re.findall(r"^## (\d+)\. ", protocol, re.M)}
    assert sections == set(range(1, 9))
    cited: dict[int, list[str]] = {}
    for package in ("corral", "router", "worker", "downloads", "tests", "scripts", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for citation in re.findall(r"docs/protocol\.md (§\d+(?:, §\d+)*)", text):
                for number in re.findall(r"§(\d+)", citation):
                    cited.setdefault(int(number), []).append(str(path.relative_to(ROOT)))
    assert cited, "no citations found: has the citation format changed?"
    unknown = {number: paths for number, paths in cited.items() if number not in sections}
    assert not unknown
