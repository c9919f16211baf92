"""The conversation → model map behind resumable streams."""

from __future__ import annotations

from router.relay.conversations import ConversationOwners


def test_a_new_claim_replaces_the_ticket() -> None:
    owners = ConversationOwners()
    first = owners.claim("c", "alpha")
    second = owners.claim("c", "beta")
    assert owners.owner("c") == "beta"
    assert not owners.holds("c", first)
    assert owners.holds("c", second)


def test_forgetting_withdraws_the_ticket() -> None:
    owners = ConversationOwners()
    ticket = owners.claim("c", "alpha")
    owners.forget("c")
    assert owners.owner("c") is None
    assert not owners.holds("c", ticket)


def test_a_stopped_model_takes_its_conversations_along() -> None:
    owners = ConversationOwners()
    owners.claim("a1", "alpha")
    owners.claim("a2", "alpha")
    owners.claim("b1", "beta")
    owners.forget_model("alpha")
    assert owners.by_model(["a1", "a2", "b1", "zz"]) == {"beta": ["b1"]}


def test_the_map_is_bounded_oldest_first() -> None:
    owners = ConversationOwners(limit=3)
    for n in range(5):
        owners.claim(f"c{n}", "alpha")
    assert [owners.owner(f"c{n}") for n in range(5)] == [None, None, "alpha", "alpha", "alpha"]
