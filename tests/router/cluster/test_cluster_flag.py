"""``--cluster ray[://ADDRESS]``: the address the router joins, or a startup error."""

from __future__ import annotations

import pytest

from router.cli.main import parse_serve_args


def test_ray_alone_joins_ray_address_else_the_local_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert parse_serve_args([]).cluster is None
    assert parse_serve_args(["--cluster", "ray"]).cluster == "auto"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert parse_serve_args(["--cluster", "ray"]).cluster == "10.0.0.1:6379"
    assert parse_serve_args(["--cluster", "ray://10.0.0.9:7000"]).cluster == "10.0.0.9:7000"


@pytest.mark.parametrize("value", ["http://10.0.0.1:6379", "ray://", "k8s"])
def test_anything_else_stops_startup_with_the_reason(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_serve_args(["--cluster", value])
    assert exited.value.code == 2
    assert "--cluster must be ray or ray://HOST:PORT" in capsys.readouterr().err
