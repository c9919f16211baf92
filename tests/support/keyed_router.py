"""A real router with a key file, for the tests of what each key holder may do
(docs/security.md, "Key holders (scopes)")."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.router_process import RouterProcess, running_router

__all__ = ["bearer", "keyed_router"]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@contextmanager
def keyed_router(
    models: Path, folder: Path, keys: list[str], *extra: str, admin: str | None = None
) -> Iterator[RouterProcess]:
    """A router over ``models`` whose key file (written in ``folder``) has the lines ``keys``;
    its own client sends the ``admin`` key, so the test's reads need not say it."""
    key_file = folder / "keys.txt"
    key_file.write_text("".join(f"{line}\n" for line in keys))
    args = ["--models-dir", str(models), "--api-key-file", str(key_file), *extra]
    with running_router(args) as router:
        if admin is not None:
            router.client.headers.update(bearer(admin))
        yield router
