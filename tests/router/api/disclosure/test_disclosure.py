"""What an inference key is not told (router/api/disclosure.py), as plain functions."""

from __future__ import annotations

import msgspec
import pytest

from router.api.disclosure import (
    JsonRewrite,
    adapters_for_inference,
    event_for_inference,
    hide_paths,
    listing_for_inference,
    props_for_inference,
)
from router.catalogue.listing import ListingStatus, ModelListing, QueueView
from router.observe.events import ModelEvent


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("/home/ann/models/alpha.gguf", "alpha.gguf"),
        (
            "failed to load model '/srv/m/q.gguf': bad magic",
            "failed to load model 'q.gguf': bad magic",
        ),
        ("--model /a/b.gguf --lora /c/d/e.gguf", "--model b.gguf --lora e.gguf"),
        ("~/models/x.gguf", "x.gguf"),
        ("C:/Users/ann/x.gguf", "x.gguf"),
        ("No space left on device: /cache/hub/blobs/abc", "No space left on device: abc"),
        # Not paths: a URL, a repository name, a relative path, a ratio.
        ("https://huggingface.co/org/repo/resolve/main/x.gguf", None),
        ("org/repo:Q4_K_M", None),
        ("models/x.gguf", None),
        ("1/2 of the layers", None),
    ],
)
def test_hide_paths_leaves_the_file_name(text: str, shown: str | None) -> None:
    assert hide_paths(text) == (text if shown is None else shown)


def test_a_listing_loses_the_command_line_and_the_preset() -> None:
    status = ListingStatus(
        value="unloaded",
        args=["python", "-m", "worker", "--model", "/m/a.gguf"],
        preset="[a]\nmodel = /m/a.gguf\n",
        failed=True,
        error="cannot open /m/a.gguf",
    )
    entry = ModelListing(
        id="a", owned_by="llamacpp", created=0, status=status, source="preset", can_remove=False
    )
    shown = msgspec.to_builtins(listing_for_inference(entry))
    assert shown["status"] == {"value": "unloaded", "failed": True, "error": "cannot open a.gguf"}
    assert entry.status.args  # the original is left as it was, for admin callers


def test_a_listings_queue_does_not_name_the_keys_that_wait() -> None:
    queue = QueueView(
        waiting=2, classes={"batch": 2}, keys={"3f2a9c1e": 1, "b7d1e044": 1}, oldest_seconds=1.0
    )
    entry = ModelListing(
        id="a",
        owned_by="llamacpp",
        created=0,
        status=ListingStatus(value="loading"),
        source="preset",
        can_remove=False,
        queue=queue,
    )
    shown = msgspec.to_builtins(listing_for_inference(entry))
    assert shown["queue"]["keys"] == {}
    assert shown["queue"]["classes"] == {"batch": 2}
    assert queue.keys  # an admin's listing still names them


def test_props_adapters_and_events_name_files_only() -> None:
    assert props_for_inference({"model_path": "/m/a.gguf", "n": 1}) == {
        "model_path": "a.gguf",
        "n": 1,
    }
    assert adapters_for_inference([{"id": 0, "path": "/l/x.gguf", "scale": 1.0}]) == [
        {"id": 0, "path": "x.gguf", "scale": 1.0}
    ]
    failed = ModelEvent("a", "status_change", {"status": "unloaded", "error": "bad /m/a.gguf"})
    assert event_for_inference(failed).data == {"status": "unloaded", "error": "bad a.gguf"}
    loaded = ModelEvent("a", "status_change", {"status": "loaded"})
    assert event_for_inference(loaded) is loaded


def test_a_json_rewrite_passes_errors_and_non_json_through() -> None:
    rewrite = JsonRewrite(props_for_inference)
    assert rewrite.whole(200, b'{"model_path":"/m/a.gguf"}') == (200, b'{"model_path":"a.gguf"}')
    assert rewrite.whole(503, b'{"error":"x"}') == (503, b'{"error":"x"}')
    assert rewrite.whole(200, b"not json") == (200, b"not json")
