"""Two keys of one router cannot read each other's prompts from the prompt cache
(docs/security.md, "Another member of the team"), over real HTTP with the ``openai`` client.

Every answer reports how many prompt tokens came from the cache (``cached_tokens``): shared by
every key, that count would tell key B how far its guess agrees with what key A asked. Key B
first sends the memo's opening alone, as an attacker probing from it would, so that its right
and wrong guesses find the same opening in its own cache; they must then report the same count.
Every guess also names key A's cache scope itself, which the router must not pass on. With
``--cache-share`` the keys share the caches again, and the right guess stands out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from router.security.api_keys import key_id
from tests.support.keyed_router import bearer, keyed_router
from tests.support.router_process import RouterProcess

KEY_A, KEY_B = "cache-scope-key-a-0001", "cache-scope-key-b-0002"
TEAM_C, TEAM_D = "cache-scope-key-c-0003", "cache-scope-key-d-0004"  # cache=team: they share
KEYS = [f"{KEY_A} inference", f"{KEY_B} inference", *(f"{k} cache=team" for k in (TEAM_C, TEAM_D))]
OPENING = "Internal memo, board only. The offer price per share is"
MEMO = f"{OPENING} forty-seven dollars, to be announced on the ninth of March by the chair."
WRONG = f"{OPENING} twelve dollars"
RIGHT = f"{OPENING} forty-seven dollars"
ARGS = ("--ctx-size", "512", "--parallel", "2")


def cached_tokens(router: RouterProcess, key: str, text: str, forged: str | None = None) -> int:
    """The prompt tokens the answer to ``key``'s one-token chat of ``text`` says were cached;
    ``forged``: the cache scope the client claims in the router's own header."""
    headers = {"X-Corral-Cache-Scope": forged} if forged is not None else {}
    with openai.OpenAI(base_url=f"{router.url}/v1", api_key=key, max_retries=0) as client:
        answer = client.chat.completions.create(
            model="alpha",
            messages=[{"role": "user", "content": text}],
            max_tokens=1,
            temperature=0,
            extra_headers=headers,
        )
    assert answer.usage is not None
    assert answer.usage.prompt_tokens_details is not None
    return answer.usage.prompt_tokens_details.cached_tokens or 0


def guesses(router: RouterProcess, author: str = KEY_A, prober: str = KEY_B) -> tuple[int, int]:
    """The ``author`` sends its memo; the ``prober`` sends the opening, then a wrong and a right
    guess (each claiming the author's scope): the cached tokens of its wrong and right guesses."""
    cached_tokens(router, author, MEMO)
    forged = key_id(author)
    cached_tokens(router, prober, OPENING, forged)
    return cached_tokens(router, prober, WRONG, forged), cached_tokens(
        router, prober, RIGHT, forged
    )


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    with keyed_router(models_dir, tmp_path_factory.mktemp("keys"), KEYS, *ARGS) as router:
        yield router


def test_another_keys_right_guess_is_not_told_from_a_wrong_one(team: RouterProcess) -> None:
    wrong, right = guesses(team)
    assert wrong > 0  # the opening, from key B's own cache: caching works, for its own prompts
    assert right == wrong


def test_a_keys_own_repeated_prompt_is_a_cache_hit(team: RouterProcess) -> None:
    cached_tokens(team, KEY_A, MEMO)
    assert cached_tokens(team, KEY_A, MEMO) > 0


def test_keys_of_one_cache_group_share_their_caches(team: RouterProcess) -> None:
    wrong, right = guesses(team, TEAM_C, TEAM_D)
    assert right > wrong


def test_with_cache_share_the_keys_share_the_caches_and_props_says_so(
    team: RouterProcess, models_dir: Path, tmp_path: Path
) -> None:
    assert team.client.get("/props", headers=bearer(KEY_B)).json()["cache_scope"] == "key"
    with keyed_router(models_dir, tmp_path, KEYS, *ARGS, "--cache-share") as shared:
        assert shared.client.get("/props", headers=bearer(KEY_B)).json()["cache_scope"] == "shared"
        wrong, right = guesses(shared)
    assert right > wrong
