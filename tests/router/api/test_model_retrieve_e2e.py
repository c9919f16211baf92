"""One model's entry and Anthropic's Models API, through the official SDKs over real HTTP:
``GET /v1/models/{id}`` answers the entry ``/v1/models`` lists (OpenAI's ``models.retrieve``),
and a request with ``anthropic-version`` gets Anthropic's entries and pages (docs/api.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from tests.support.files.hub_cache import lay_out
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

HUB_ID = "acme/tiny-GGUF:Q8_0"  # a hub name: its id has a slash
IDS = [HUB_ID, "alpha", "beta"]  # as listed: sorted by id


@pytest.fixture(scope="module")
def router(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    scratch = tmp_path_factory.mktemp("retrieve")
    tiny = write_tiny_gguf(scratch / "tiny.gguf", name="tiny")
    cache = scratch / "hub"
    lay_out(cache, {"tiny-Q8_0.gguf": tiny.read_bytes()})
    args = ["--models-dir", str(models_dir), "--ctx-size", "512"]
    with running_router(args, {"HF_HUB_CACHE": str(cache)}) as process:
        yield process


@pytest.fixture
def openai_client(router: RouterProcess) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=router.url + "/v1", api_key="unused", max_retries=0) as client:
        yield client


@pytest.fixture
def anthropic_client(router: RouterProcess) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=router.url, api_key="unused", max_retries=0) as client:
        yield client


@pytest.mark.parametrize("model", IDS)
def test_openai_retrieve_answers_the_listed_entry(
    router: RouterProcess, openai_client: openai.OpenAI, model: str
) -> None:
    listed = {entry["id"]: entry for entry in router.client.get("/v1/models").json()["data"]}
    raw = openai_client.models.with_raw_response.retrieve(model)
    found = raw.parse()
    assert (found.id, found.object, found.owned_by) == (model, "model", "llamacpp")
    entry = raw.http_response.json()
    # The same entry; only ``created`` (the time of the answer) may have moved on a second.
    assert abs(entry.pop("created") - listed[model].pop("created")) <= 1
    assert entry == listed[model]


def test_a_tag_in_another_case_finds_its_model_s_entry(router: RouterProcess) -> None:
    answer = router.client.get("/v1/models/acme/tiny-GGUF:q8_0")  # as requests may name it
    assert answer.status_code == 200, answer.text
    assert answer.json()["id"] == HUB_ID


def test_openai_retrieve_of_an_unknown_id_is_a_404_with_the_error_json(
    openai_client: openai.OpenAI,
) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        openai_client.models.retrieve("alpah")
    assert raised.value.status_code == 404
    assert raised.value.body == {
        "code": 404,
        "message": "model 'alpah' not found; did you mean 'alpha'?",
        "type": "not_found_error",
    }


def test_anthropic_list_gets_anthropic_entries(anthropic_client: anthropic.Anthropic) -> None:
    page = anthropic_client.models.list()
    assert [model.id for model in page.data] == IDS
    assert (page.has_more, page.first_id, page.last_id) == (False, HUB_ID, "beta")
    for model in page.data:
        assert model.type == "model"
        assert model.display_name == model.id
        assert model.created_at.tzinfo is not None  # RFC 3339, in UTC


def test_the_raw_anthropic_page_has_only_anthropic_s_fields(router: RouterProcess) -> None:
    headers = {"anthropic-version": "2023-06-01"}
    page = router.client.get("/v1/models", params={"limit": 1}, headers=headers).json()
    assert page == {
        "data": [page["data"][0]],
        "has_more": True,
        "first_id": HUB_ID,
        "last_id": HUB_ID,
    }
    assert set(page["data"][0]) == {"type", "id", "display_name", "created_at"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", page["data"][0]["created_at"])


def test_anthropic_pages_walk_forward_and_back(anthropic_client: anthropic.Anthropic) -> None:
    # The SDK's iterator asks for the next page after each page's last id while has_more.
    assert [model.id for model in anthropic_client.models.list(limit=1)] == IDS
    first = anthropic_client.models.list(limit=2)
    assert ([m.id for m in first.data], first.has_more) == ([HUB_ID, "alpha"], True)
    second = anthropic_client.models.list(limit=2, after_id="alpha")
    assert ([m.id for m in second.data], second.has_more) == (["beta"], False)
    back = anthropic_client.models.list(limit=1, before_id="beta")
    assert ([m.id for m in back.data], back.has_more) == (["alpha"], True)
    assert (back.first_id, back.last_id) == ("alpha", "alpha")
    empty = anthropic_client.models.list(after_id="beta")
    assert (empty.data, empty.has_more, empty.first_id, empty.last_id) == ([], False, None, None)


@pytest.mark.parametrize("limit", [0, 1001])
def test_anthropic_limit_out_of_range_is_a_400(
    anthropic_client: anthropic.Anthropic, limit: int
) -> None:
    with pytest.raises(anthropic.BadRequestError, match="limit: must be from 1 to 1000"):
        anthropic_client.models.list(limit=limit)


@pytest.mark.parametrize("model", IDS)
def test_anthropic_retrieve_answers_the_anthropic_entry(
    anthropic_client: anthropic.Anthropic, model: str
) -> None:
    found = anthropic_client.models.retrieve(model)
    assert (found.id, found.type, found.display_name) == (model, "model", model)


def test_anthropic_retrieve_of_an_unknown_id_is_a_404(
    anthropic_client: anthropic.Anthropic,
) -> None:
    with pytest.raises(anthropic.NotFoundError):
        anthropic_client.models.retrieve("nope")
