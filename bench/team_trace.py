"""A team's afternoon as a list of requests: who asks which model what, and when (bench/team.py).

Seeded and made of plain data, so both routers replay exactly the same requests: every prompt,
every reply kept in a conversation's history (the trace's own text, not what a server said, so
a slow or noisy model does not change the next prompt), every think time. Each request belongs
to an *actor* and waits ``wait_s`` after that actor's previous answer ended (the first one:
after the trace starts), as a person reads an answer before typing the next message; an actor
that is served faster asks more in the same wall time, which is what "tokens delivered" counts.

Actors (docs/benchmarks.md, Team):
- **users** (class ``interactive``): streamed chats, each user mostly on a home model and now
  and then on another, think times of seconds; some send ``X-Conversation-Id`` as the Web UI
  does (one id per conversation, a conversation per user and model);
- **the agent** (class ``agent``): sessions of turns whose prompts share one long prefix (tool
  definitions), each turn adding a tool result, a second between turns;
- **the batch key** (class ``batch``): a backlog of short completions on a model of its own,
  more than a window can serve, sent by ``BATCH_LANES`` lanes back to back (a script with a
  small worker pool working through a queue): what it gets done measures what the box
  delivers next to the people it serves. A job small enough to finish in the window
  (``batch_per_second`` 0.5) is finished by any server: its tokens are the same on both sides,
  and only the people's turns differ.

Two more traces put one case each (docs/benchmarks.md, Team), with the router flags they need
written in the trace:
- **thrash** (:func:`make_thrash_trace`, ``--models-max 1``): two users alternating between
  two models, think times of 1 to 4 s, and a small batch job on one of them (llama.cpp #21678:
  a loop of loading and unloading);
- **fair** (:func:`make_fair_trace`, one model, ``--parallel 2``): two keys of one class, a
  heavy key keeping six 256-token requests in flight and a light key sending a 32-token chat
  every 3 s (on a clock, ``at_s``, whether or not the last one was answered); made without
  the heavy key too, for the light key's time to first token alone.
The team trace's batch job can also come in bursts (``bursts``): that many requests at once
every :data:`BURST_EVERY_S` seconds, so that many batch requests wait together.

Generated text is noise on the stand-in models, so every request sets ``ignore_eos`` and a
fixed ``max_tokens``: the work asked is the same on both sides whatever comes out.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec

__all__ = [
    "BATCH_LANES",
    "BURST_EVERY_S",
    "CLASSES",
    "MODELS",
    "TRACES",
    "Actor",
    "Request",
    "Trace",
    "make_fair_trace",
    "make_thrash_trace",
    "make_trace",
]

# The three chat models; the routers get room for two. Names are the GGUF files' stems in the
# bench's --models-dir (bench/team.py writes them).
MODELS = ("smollm2", "standin-360m", "standin-135m")
CLASSES = ("interactive", "agent", "batch")
BATCH_LANES = 2
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"

# (name, home model, sends X-Conversation-Id, starts at s)
_USERS = (
    ("user-1", "smollm2", True, 0.0),
    ("user-2", "smollm2", False, 1.5),
    ("user-3", "standin-360m", True, 3.0),
)
_HOME_SHARE = 0.8  # a user's turns on the home model; the rest on one of the others
_THINK_MEAN_S = 5.0
_THINK_RANGE_S = (1.5, 15.0)
_HISTORY_MESSAGES = 6  # what a conversation keeps of its past turns (the prompt stays bounded)
_AGENT_MODEL = "smollm2"
_AGENT_TURNS = 5
_AGENT_TOOL_S = 1.0  # a tool runs between two turns
_AGENT_BREAK_S = 4.0  # between two sessions
_BATCH_MODEL = "standin-135m"
_BATCH_START_SHARE = 0.15  # the batch job starts this far into the window
# The backlog's size per second of window: above what two lanes of 16-token completions on a
# 135M model get through on one core (a few a second), so the lanes never run dry. A smaller
# one (0.5: the first design, 30 a minute) is a job that both routers can finish in the window.
BATCH_PER_SECOND = 10.0
BURST_EVERY_S = 10.0  # between two bursts of the batch job, when it comes in bursts
TRACES = ("team", "thrash", "fair")
# thrash: two users, each alternating between the two models, a small job on the first.
_THRASH_MODELS = ("smollm2", "standin-360m")
_THRASH_THINK_S = (1.0, 4.0)
_THRASH_BATCH_PER_SECOND = 0.25  # a small job: 15 completions a minute, one lane
# fair: one model; the heavy key's lanes and answer length, the light key's chat and period.
_FAIR_MODEL = "smollm2"
_FAIR_HEAVY_LANES, _FAIR_HEAVY_TOKENS = 6, 256
_FAIR_LIGHT_TOKENS, _FAIR_LIGHT_EVERY_S, _FAIR_LIGHT_START_S = 32, 3.0, 2.0

_TOPICS = (
    "the lighthouse keeper's logbook",
    "a recipe for sourdough bread",
    "why the build cache misses on CI",
    "the difference between a mutex and a semaphore",
    "a polite reply to a customer who was charged twice",
    "the history of the printing press",
    "how to read a flame graph",
    "a packing list for three days of hiking",
    "the rules of a card game for four players",
    "what a Bloom filter trades for its size",
)
_ASKS = (
    "Explain {topic} in a few sentences.",
    "Give me three short points about {topic}.",
    "Rewrite your last answer about {topic} for a beginner.",
    "What is the one thing people get wrong about {topic}?",
    "Summarize {topic} as a haiku, then explain it.",
)
_WORDS = (
    "request",
    "model",
    "token",
    "cache",
    "slot",
    "queue",
    "stream",
    "worker",
    "router",
    "budget",
    "memory",
    "layer",
    "prompt",
    "prefix",
    "answer",
    "session",
    "tool",
    "result",
    "schema",
    "field",
    "value",
    "error",
    "retry",
    "window",
    "batch",
    "user",
)


class Request(msgspec.Struct, frozen=True):
    actor: str
    cls: str  # one of CLASSES
    model: str
    route: str  # CHAT or COMPLETIONS
    body: dict[str, Any]  # without "model" and "stream", which the replay adds
    wait_s: float  # after the actor's previous answer ended (the first: after the start)
    conversation: str | None = None  # sent as X-Conversation-Id
    at_s: float | None = None  # and not before this many seconds into the window: a schedule


class Actor(msgspec.Struct, frozen=True):
    name: str
    cls: str
    key: str  # the name of its API key (bench/team.py turns it into a secret)
    requests: list[Request]


class Trace(msgspec.Struct, frozen=True):
    seed: int
    window_s: float
    actors: list[Actor]
    name: str = "team"  # one of TRACES
    models_max: int = 2  # the routers' --models-max for it
    parallel: int | None = None  # the routers' --parallel for it; None: the bench's

    def requests(self) -> list[Request]:
        return [request for actor in self.actors for request in actor.requests]


def _filler(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _think(rng: random.Random) -> float:
    low, high = _THINK_RANGE_S
    return round(min(high, max(low, rng.expovariate(1 / _THINK_MEAN_S))), 2)


def _user(rng: random.Random, name: str, home: str, ids: bool, start: float, turns: int) -> Actor:
    others = [model for model in MODELS if model != home]
    histories: dict[str, list[dict[str, str]]] = {}
    requests = []
    for turn in range(turns):
        model = home if rng.random() < _HOME_SHARE else rng.choice(others)
        history = histories.setdefault(model, [])
        topic = rng.choice(_TOPICS)
        ask = rng.choice(_ASKS).format(topic=topic)
        max_tokens = rng.choice((16, 24, 32, 48))
        messages = [*history[-_HISTORY_MESSAGES:], {"role": "user", "content": ask}]
        body = {"messages": messages, "max_tokens": max_tokens}
        conversation = f"{name}-{model}" if ids else None
        wait = start if turn == 0 else _think(rng)
        requests.append(Request(name, "interactive", model, CHAT, body, wait, conversation))
        # The reply kept in the history is the trace's, about as long as the one asked for.
        reply = f"About {topic}: {_filler(rng, max_tokens * 3 // 4)}."
        history += [{"role": "user", "content": ask}, {"role": "assistant", "content": reply}]
    return Actor(name, "interactive", name, requests)


def _agent(rng: random.Random, turns: int) -> Actor:
    # The shared prefix: a system prompt of tool definitions, the same for every session, so a
    # server that keeps it cached prefills only what each turn adds.
    tools = "\n".join(f"- tool_{n}(arg_{n}: string): {_filler(rng, 24)}" for n in range(1, 13))
    system = {"role": "system", "content": f"You are a coding agent. Tools:\n{tools}"}
    requests = []
    session: list[dict[str, str]] = []
    for turn in range(turns):
        if turn % _AGENT_TURNS == 0:
            task = (
                f"Task {turn // _AGENT_TURNS + 1}: fix the failing test in {rng.choice(_TOPICS)}."
            )
            session = [system, {"role": "user", "content": task}]
            wait = 2.0 if turn == 0 else _AGENT_BREAK_S
        else:
            wait = _AGENT_TOOL_S
        body = {"messages": list(session), "max_tokens": 32}
        requests.append(Request("agent", "agent", _AGENT_MODEL, CHAT, body, wait))
        call = f"tool_{rng.randint(1, 12)}({_filler(rng, 4)!r})"
        result = _filler(rng, rng.randint(30, 60))
        session += [
            {"role": "assistant", "content": call},
            {"role": "user", "content": f"Result of {call}: {result}"},
        ]
    return Actor("agent", "agent", "agent", requests)


def _batch_lanes(rng: random.Random, window_s: float, per_second: float) -> list[Actor]:
    size = max(BATCH_LANES, round(window_s * per_second))
    start = round(window_s * _BATCH_START_SHARE, 2)
    lanes: list[list[Request]] = [[] for _ in range(BATCH_LANES)]
    for n in range(size):
        lane = lanes[n % BATCH_LANES]
        wait = start if not lane else 0.0
        body = _completion(rng)
        lane.append(
            Request(f"batch-{n % BATCH_LANES + 1}", "batch", _BATCH_MODEL, COMPLETIONS, body, wait)
        )
    return [Actor(f"batch-{n + 1}", "batch", "batch", lane) for n, lane in enumerate(lanes)]


def _batch_bursts(rng: random.Random, window_s: float, size: int) -> list[Actor]:
    """``size`` lanes, each sending one request of every burst: a burst every BURST_EVERY_S
    seconds from 15 % into the window, all its requests at once (a lane still waiting for its
    last answer sends its next when that ends)."""
    start = round(window_s * _BATCH_START_SHARE, 2)
    times = [start + n * BURST_EVERY_S for n in range(int((window_s - start) / BURST_EVERY_S) + 1)]
    lanes = []
    for lane in range(size):
        name = f"batch-{lane + 1}"
        requests = [
            Request(name, "batch", _BATCH_MODEL, COMPLETIONS, _completion(rng), 0.0, None, at)
            for at in times
        ]
        lanes.append(Actor(name, "batch", "batch", requests))
    return lanes


def _completion(rng: random.Random) -> dict[str, Any]:
    prompt = f"Label the sentiment of this review in one word: {_filler(rng, 20)}\nLabel:"
    return {"prompt": prompt, "max_tokens": 16}


def make_trace(
    seed: int, window_s: float, batch_per_second: float = BATCH_PER_SECOND, bursts: int = 0
) -> Trace:
    """The trace for a window of ``window_s`` seconds: users and the agent get more turns than
    the window can hold (they run until it ends), the batch job ``batch_per_second`` requests
    per second of window (by default a backlog larger than it can serve), or with ``bursts``
    that many requests at once every BURST_EVERY_S seconds."""
    rng = random.Random(seed)
    # Enough turns that nobody runs out: a turn takes at least its think time.
    user_turns = int(window_s / _THINK_RANGE_S[0]) + 1
    actors = [_user(rng, *user, user_turns) for user in _USERS]
    actors.append(_agent(rng, int(window_s / _AGENT_TOOL_S) + 1))
    if bursts:
        actors += _batch_bursts(rng, window_s, bursts)
    else:
        actors += _batch_lanes(rng, window_s, batch_per_second)
    return Trace(seed, float(window_s), actors)


def _alternating(rng: random.Random, name: str, first: int, turns: int) -> Actor:
    """A user switching model every turn (the other model of _THRASH_MODELS each time)."""
    requests = []
    for turn in range(turns):
        model = _THRASH_MODELS[(first + turn) % 2]
        ask = rng.choice(_ASKS).format(topic=rng.choice(_TOPICS))
        body = {"messages": [{"role": "user", "content": ask}], "max_tokens": rng.choice((16, 32))}
        wait = first * 0.5 if turn == 0 else round(rng.uniform(*_THRASH_THINK_S), 2)
        requests.append(Request(name, "interactive", model, CHAT, body, wait))
    return Actor(name, "interactive", name, requests)


def make_thrash_trace(seed: int, window_s: float) -> Trace:
    """Two users alternating between two models with room for one, and a small batch job on
    the first model, sent by one lane back to back from 15 % into the window."""
    rng = random.Random(seed)
    turns = int(window_s / _THRASH_THINK_S[0]) + 1
    actors = [_alternating(rng, f"user-{n + 1}", n, turns) for n in range(2)]
    start = round(window_s * _BATCH_START_SHARE, 2)
    job = [
        Request("batch-1", "batch", _THRASH_MODELS[0], COMPLETIONS, _completion(rng), wait)
        for wait in [start] + [0.0] * (max(1, round(window_s * _THRASH_BATCH_PER_SECOND)) - 1)
    ]
    actors.append(Actor("batch-1", "batch", "batch", job))
    return Trace(seed, float(window_s), actors, "thrash", models_max=1)


def make_fair_trace(seed: int, window_s: float, heavy: bool = True) -> Trace:
    """One model, two slots, two keys of one class: ``heavy``'s six lanes each send 256-token
    chats back to back; ``light`` sends a 32-token chat every 3 s on a clock. Without
    ``heavy``, the light key's requests alone (the same ones)."""
    rng = random.Random(seed)
    light = []
    for n in range(int((window_s - _FAIR_LIGHT_START_S) / _FAIR_LIGHT_EVERY_S) + 1):
        ask = rng.choice(_ASKS).format(topic=rng.choice(_TOPICS))
        body = {"messages": [{"role": "user", "content": ask}], "max_tokens": _FAIR_LIGHT_TOKENS}
        at = _FAIR_LIGHT_START_S + n * _FAIR_LIGHT_EVERY_S
        light.append(Request("light", "interactive", _FAIR_MODEL, CHAT, body, 0.0, None, at))
    actors = [Actor("light", "interactive", "light", light)]
    # Enough for a lane that never waits: a 256-token answer takes well over a tenth of a second.
    answers = int(window_s * 10) + 1
    for lane in range(_FAIR_HEAVY_LANES if heavy else 0):
        name = f"heavy-{lane + 1}"
        body = {
            "messages": [{"role": "user", "content": f"Write at length about {_TOPICS[lane]}."}],
            "max_tokens": _FAIR_HEAVY_TOKENS,
        }
        requests = [Request(name, "interactive", _FAIR_MODEL, CHAT, body, 0.0)] * answers
        actors.append(Actor(name, "interactive", "heavy", requests))
    return Trace(seed, float(window_s), actors, "fair", models_max=1, parallel=2)
