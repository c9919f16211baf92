"""The conversation → model map behind resumable streams (docs/protocol.md §5)."""

from __future__ import annotations

from pathlib import Path

from router.catalogue.catalogue import CatalogueEntry
from router.relay.conversations import ConversationOwners
from router.workers.model_state import ModelFields, ModelState


def _exited(name: str, **fields: object) -> ModelState:
    """A model whose worker just exited, as the pool reports it to its exit listeners."""
    record = ModelFields(CatalogueEntry(name, Path(f"{name}.gguf"), "models_dir"), [])
    for key, value in fields.items():
        setattr(record, key, value)
    return ModelState(record)


def test_a_new_claim_replaces_the_old_one() -> None:
    owners = ConversationOwners()
    first = owners.claim(None, "c", "alpha")
    second = owners.claim(None, "c", "beta")
    assert owners.owner(None, "c") == "beta"
    assert not first.live()
    assert second.live()


def test_forgetting_withdraws_the_claim() -> None:
    owners = ConversationOwners()
    claim = owners.claim(None, "c", "alpha")
    owners.forget(None, "c")
    assert owners.owner(None, "c") is None
    assert not claim.live()


def test_a_worker_exit_ends_only_the_sessions_sent_to_it() -> None:
    owners = ConversationOwners()
    running = owners.claim(None, "a1", "alpha")
    running.attach()
    waiting = owners.claim(None, "a2", "alpha")  # its request waits for alpha's next load
    owners.claim(None, "b1", "beta").attach()
    owners.worker_exited(_exited("alpha"))
    assert not running.live()
    assert running.ended == "model 'alpha' stopped"
    assert waiting.live()
    assert owners.by_model(None, ["a1", "a2", "b1", "zz"]) == {"alpha": ["a2"], "beta": ["b1"]}


def test_the_reason_a_session_ended_says_how_its_worker_went() -> None:
    owners = ConversationOwners()
    crashed, stalled = owners.claim(None, "c", "alpha"), owners.claim(None, "s", "beta")
    crashed.attach()
    stalled.attach()
    owners.worker_exited(_exited("alpha", exit_code=1))
    owners.worker_exited(_exited("beta", exit_code=1, fault_message="stalled: no progress"))
    assert crashed.ended == "model 'alpha' crashed"
    assert stalled.ended == "model 'beta' stalled: no progress"


def test_a_request_that_failed_before_its_worker_ends_its_claim() -> None:
    owners = ConversationOwners()
    claim = owners.claim(None, "c", "alpha")
    claim.fail("model 'alpha' was stopped before it finished loading")
    assert owners.owner(None, "c") is None
    found = owners.find(None, "c")
    assert found is not None
    assert found.ended == "model 'alpha' was stopped before it finished loading"


def test_the_map_is_bounded_oldest_first() -> None:
    owners = ConversationOwners(limit=3)
    for n in range(5):
        owners.claim(None, f"c{n}", "alpha")
    assert [owners.owner(None, f"c{n}") for n in range(5)] == [
        None,
        None,
        "alpha",
        "alpha",
        "alpha",
    ]


def test_each_key_has_its_own_conversations() -> None:
    owners = ConversationOwners()
    mine = owners.claim("key-a", "chat-1", "alpha")
    theirs = owners.claim("key-b", "chat-1", "beta")  # the same id: another session
    assert mine.live()
    assert theirs.live()
    assert (mine.session_key, theirs.session_key) == ("key-a/chat-1", "key-b/chat-1")
    assert owners.owner("key-a", "chat-1") == "alpha"
    assert owners.owner("key-b", "chat-1") == "beta"
    owners.forget("key-b", "chat-1")
    assert mine.live()
    assert owners.owner("key-b", "chat-1") is None
    assert owners.by_model("key-b", ["chat-1"]) == {}
    assert owners.find("key-c", "chat-1") is None


def test_a_flood_of_claims_evicts_only_the_flooding_keys_own() -> None:
    owners = ConversationOwners(limit=100)
    kept = [owners.claim("honest", f"chat-{n}", "alpha") for n in range(10)]
    for n in range(1_000):
        owners.claim("flood", f"junk-{n}", "alpha")
    assert all(claim.live() for claim in kept)
    assert owners.owner("flood", "junk-999") == "alpha"
    assert owners.owner("flood", "junk-0") is None  # its own oldest went first
    # A claim again on a kept id replaces it without counting twice.
    owners.claim("honest", "chat-0", "beta")
    assert owners.owner("honest", "chat-1") == "alpha"
