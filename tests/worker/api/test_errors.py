"""The engine's domain errors get their HTTP status in one place (worker/api/errors.py)."""

from __future__ import annotations

import pytest

from worker.api.errors import as_api_error
from worker.host.errors import EngineError, EngineFailure, InvalidInput


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (
            InvalidInput("logit_bias: token id 10 is outside the vocabulary"),
            400,
            "invalid_request_error",
        ),
        (EngineFailure("Unable to save slot"), 500, "server_error"),
    ],
)
def test_each_domain_error_becomes_its_status(error: EngineError, status: int, kind: str) -> None:
    api = as_api_error(error)
    assert (api.status, api.type, api.message) == (status, kind, error.message)
