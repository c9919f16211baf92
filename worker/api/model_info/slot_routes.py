"""``GET /slots`` and ``POST /slots/{id}?action=save|restore|erase``, as llama-server answers them.

Statuses and messages follow upstream's ``server-context.cpp`` (docs/api.md, "Slots"). An action
on a slot that is generating waits until the slot is free, as upstream defers it.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar import get, post
from litestar.params import FromQuery

from corral.http.errors import ApiError
from corral.http.worker_routes import SLOT_ACTION, SLOTS, worker_opt
from worker.cache.slot_files import erase_slot, restore_slot, save_slot, valid_filename
from worker.engine.batching import slot_index
from worker.engine.model import LoadedModel
from worker.host.cache_scope import request_cache_scope
from worker.sampling.generation_settings import generation_settings
from worker.state import AnyRequest, loaded

__all__ = ["slot_routes"]

# std::stoi, as upstream parses the id: leading blanks, a sign, digits, anything after; a value
# beyond a C int is out of range.
_STOI = re.compile(r"\s*([+-]?\d+)")
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def _describe(model: LoadedModel) -> tuple[list[dict[str, Any]], int]:
    """Every slot as upstream's ``server_slot::to_json(only_metrics)``, and how many are idle."""
    batcher = model.batcher
    slots = []
    for slot in batcher.slots:
        view: dict[str, Any] = {
            "id": slot.id,
            "n_ctx": batcher.n_ctx_seq,
            "speculative": model.speculator is not None,
            "is_processing": slot.generation is not None,
        }
        last = slot.last
        if last is not None:
            params = last.params
            budget = -1 if last.max_tokens is None else last.max_tokens
            # An idle slot's counters are reset as upstream's server_slot::reset() leaves them:
            # the finished task's budget must not look like work still owed.
            busy = slot.generation is not None
            decoded = last.generated if busy else 0
            remaining = budget - decoded if busy and budget != -1 else -1
            view |= {
                "id_task": slot.id_task,
                "n_prompt_tokens": len(slot.tokens),  # upstream: what its cache holds
                "n_prompt_tokens_processed": len(last.prompt) - last.cached,
                "n_prompt_tokens_cache": last.cached,
                "params": generation_settings(
                    params,
                    n_predict=budget,
                    n_keep=last.n_keep,
                    stops=last.stops,
                    n_probs=last.n_probs,
                )
                | {"lora": []},
                "next_token": [
                    {
                        "has_next_token": busy,
                        "has_new_line": False,
                        "n_remain": remaining,
                        "n_decoded": decoded,
                    }
                ],
            }
        slots.append(view)
    idle = sum(1 for slot in batcher.slots if slot.generation is None)
    return slots, idle


@get(SLOTS.paths)
async def slots(
    request: AnyRequest, fail_on_no_slot: FromQuery[str | None] = None
) -> list[dict[str, Any]]:
    engine, model = loaded(request)
    if not model.settings.endpoint_slots:
        raise ApiError(501, "This server does not support slots endpoint. Start it with `--slots`")
    views, idle = await engine.call(lambda: _describe(model), needs_model=False)
    if fail_on_no_slot and idle == 0:
        raise ApiError(503, "no slot available")
    return views


class _SlotFile(msgspec.Struct):
    filename: str


def _filename(body: bytes) -> str:
    """The body's ``filename``, checked as upstream checks it (a missing one: 400, not 500)."""
    try:
        name = msgspec.json.decode(body, type=_SlotFile).filename
    except msgspec.DecodeError as exc:
        raise ApiError(400, f"invalid request: {exc}") from None
    if not valid_filename(name):
        raise ApiError(400, "Invalid filename")
    return name


@post(SLOT_ACTION.paths, status_code=200, opt=worker_opt(SLOT_ACTION))
async def slot_action(
    request: AnyRequest, id_slot: str, action: FromQuery[str | None] = None
) -> dict[str, Any]:
    engine, model = loaded(request)
    folder = model.settings.slot_save_path
    if folder is None:
        raise ApiError(
            501, "This server does not support slots action. Start it with `--slot-save-path`"
        )
    number = _STOI.match(id_slot)
    if number is None or not _INT_MIN <= int(number[1]) <= _INT_MAX:
        raise ApiError(400, "Invalid slot ID")
    slot_id = int(number[1])

    def slot_free() -> bool:
        slots = model.batcher.slots  # read each time: a wake-up makes a new batcher
        return slots[slot_index(slot_id, len(slots))].generation is None

    if action == "save":
        name = _filename(await request.body())
        return await engine.call(lambda: save_slot(model, slot_id, folder, name), when=slot_free)
    if action == "restore":
        name = _filename(await request.body())
        scope = request_cache_scope()  # the restored cache is the restoring caller's
        return await engine.call(
            lambda: restore_slot(model, slot_id, folder, name, scope), when=slot_free
        )
    if action == "erase":
        return await engine.call(lambda: erase_slot(model, slot_id), when=slot_free)
    raise ApiError(400, "Invalid action")


slot_routes = [slots, slot_action]
