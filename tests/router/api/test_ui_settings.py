"""``--webui-config``/``--webui-config-file``: the Web UI's settings in ``/props``, as llama-server
answers them, from the router and from a model's worker alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from router.cli.main import parse_serve_args
from tests.support.router_process import running_router

SETTINGS = {"theme": "dark", "showTokensPerSecond": True}


def test_props_hand_out_the_web_ui_settings(models_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "ui.json"
    config.write_text(json.dumps(SETTINGS))
    args = ["--models-dir", str(models_dir), "--webui-config-file", str(config)]
    with running_router(args) as router:
        assert router.client.get("/props").json()["ui_settings"] == SETTINGS
        # A model's own /props comes from its worker, which got the option too.
        assert router.client.get("/props?model=alpha").json()["ui_settings"] == SETTINGS


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--webui-config", "{not json"], "--ui-config: not JSON"),
        (["--ui-config", "[]"], "must be a JSON object"),
        (["--ui-config", "{}", "--ui-config-file", "x.json"], "not both"),
    ],
)
def test_a_bad_web_ui_config_is_refused_at_startup(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_serve_args(argv)
    assert error in capsys.readouterr().err


def test_the_inline_config_is_parsed_once() -> None:
    assert parse_serve_args(["--webui-config", json.dumps(SETTINGS)]).ui_settings == SETTINGS
