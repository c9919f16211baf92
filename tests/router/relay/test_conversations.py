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
    first = owners.claim("c", "alpha")
    second = owners.claim("c", "beta")
    assert owners.owner("c") == "beta"
    assert not first.live()
    assert second.live()


def test_forgetting_withdraws_the_claim() -> None:
    owners = ConversationOwners()
    claim = owners.claim("c", "alpha")
    owners.forget("c")
    assert owners.owner("c") is None
    assert not claim.live()


def test_a_worker_exit_ends_only_the_sessions_sent_to_it() -> None:
    owners = ConversationOwners()
    running = owners.claim("a1", "alpha")
    running.attach()
    waiting = owners.claim("a2", "alpha")  # its request waits for alpha's next load
    owners.claim("b1", "beta").attach()
    owners.worker_exited(_exited("alpha"))
    assert not running.live()
    assert running.ended == "model 'alpha' stopped"
    assert waiting.live()
    assert owners.by_model(["a1", "a2", "b1", "zz"]) == {"alpha": ["a2"], "beta": ["b1"]}


def test_the_reason_a_session_ended_says_how_its_worker_went() -> None:
    owners = ConversationOwners()
    crashed, stalled = owners.claim("c", "alpha"), owners.claim("s", "beta")
    crashed.attach()
    stalled.attach()
    owners.worker_exited(_exited("alpha", exit_code=1))
    owners.worker_exited(_exited("beta", exit_code=1, fault_message="stalled: no progress"))
    assert crashed.ended == "model 'alpha' crashed"
    assert stalled.ended == "model 'beta' stalled: no progress"


def test_a_request_that_failed_before_its_worker_ends_its_claim() -> None:
    owners = ConversationOwners()
    claim = owners.claim("c", "alpha")
    claim.fail("model 'alpha' was stopped before it finished loading")
    assert owners.owner("c") is None
    found = owners.find("c")
    assert found is not None
    assert found.ended == "model 'alpha' was stopped before it finished loading"


def test_the_map_is_bounded_oldest_first() -> None:
    owners = ConversationOwners(limit=3)
    for n in range(5):
        owners.claim(f"c{n}", "alpha")
    assert [owners.owner(f"c{n}") for n in range(5)] == [None, None, "alpha", "alpha", "alpha"]
