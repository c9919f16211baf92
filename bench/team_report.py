"""What bench/team.py makes of the replies: per class, per side, and Corral over llama.cpp.

Only arithmetic, so that it can be tested without a server (tests/bench/test_team_report.py).
Definitions (docs/benchmarks.md, Team):
- **time to first token**: request sent → first streamed token. A request still waiting for
  its first token when the window ends counts with its wait so far (a lower bound): a router
  that leaves someone waiting is not rewarded for it by the percentiles.
- **completed**, **tokens**: requests answered to their end within the window, and their
  completion tokens; what is cut at the window's end is not delivered.
- **loads**: model loads the server started in the window (its own count); **swaps**: those
  of a model already loaded once in that window (it was put out and is loaded again), so a
  model's first load, which any server pays whatever its order, is not one; **swaps per 100
  requests**: swaps per hundred requests sent.
- **batch backlog**: the batch job is more requests than a window can serve; a request sent
  either completes, is cut at the window's end (not delivered) or fails (an error), and what
  was never sent is left in the backlog.
- **errors**: any answer the trace did not ask for: a status that is not 2xx, an error event,
  a dropped connection, a stream with no token.
- **batch longest wait**: the longest time to first token of a batch request, to be read
  against the waiting bound the scheduler documents (docs/serving.md, "Scheduling").
- **fair trace**: per key, not per class: the light key's time to first token p95 with the
  heavy key and alone, and the heavy key's tokens against Corral's under ``--schedule fifo``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import msgspec

from bench.team_trace import CLASSES

__all__ = [
    "TARGETS",
    "ClassFigures",
    "FairFigures",
    "Outcome",
    "SideFigures",
    "fair_figures",
    "percentile",
    "ratios",
    "render",
    "render_fair",
    "side_figures",
]


class Outcome(msgspec.Struct):
    actor: str
    cls: str
    model: str
    sent_s: float  # since the window opened
    ttft_s: float | None = None  # None: no token yet
    done: bool = False
    tokens: int = 0
    error: str | None = None
    cut: bool = False  # still running when the window closed
    key: str = ""  # the actor's API key (the fair trace reads its figures per key)


class ClassFigures(msgspec.Struct):
    sent: int
    completed: int
    cut: int
    errors: int
    tokens: int
    ttft_p50_s: float
    ttft_p95_s: float
    ttft_max_s: float
    waiting_at_end: int  # cut before their first token


class SideFigures(msgspec.Struct):
    classes: dict[str, ClassFigures]
    requests: int
    tokens: int
    errors: int
    loads: int
    loads_per_model: dict[str, int]
    swaps: int
    swaps_per_100: float
    batch_in_trace: int
    error_examples: list[str]


# Per trace: (figure, Corral over llama.cpp at most (True) or at least (False), the ratio).
# Issue 51: on the team trace swaps are no target any more (they are still shown), and the box
# must not do less; the thrash trace keeps issue 37's three.
TARGETS = {
    "team": (
        ("interactive TTFT p95", True, 0.4),
        ("agent TTFT p95", True, 0.5),
        ("tokens delivered", False, 1.0),
    ),
    "thrash": (
        ("interactive TTFT p95", True, 0.5),
        ("swaps per 100 requests", True, 0.5),
        ("tokens delivered", False, 1.2),
    ),
}
# The fair trace's: the light key's p95 with the heavy key over its p95 alone, at most; the
# heavy key's tokens over its tokens under --schedule fifo, at least.
FAIR_LIGHT_MAX, FAIR_HEAVY_MIN = 1.5, 0.9


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 to 100), linear between the two nearest ranks; NaN for none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _class_figures(outcomes: list[Outcome], window_s: float) -> ClassFigures:
    waits = [o.ttft_s if o.ttft_s is not None else window_s - o.sent_s for o in outcomes]
    return ClassFigures(
        sent=len(outcomes),
        completed=sum(o.done for o in outcomes),
        cut=sum(o.cut for o in outcomes),
        errors=sum(o.error is not None for o in outcomes),
        tokens=sum(o.tokens for o in outcomes if o.done),
        ttft_p50_s=percentile(waits, 50),
        ttft_p95_s=percentile(waits, 95),
        ttft_max_s=max(waits, default=math.nan),
        waiting_at_end=sum(o.cut and o.ttft_s is None for o in outcomes),
    )


def side_figures(
    outcomes: list[Outcome],
    window_s: float,
    window_loads: list[dict[str, int]],
    batch_in_trace: int,
) -> SideFigures:
    """One side's figures from its outcomes (of one or more windows of ``window_s``), the loads
    its server counted per model in each window and how many batch requests the trace held
    (over those windows)."""
    classes = {
        cls: _class_figures([o for o in outcomes if o.cls == cls], window_s) for cls in CLASSES
    }
    loads: dict[str, int] = {}
    for window in window_loads:
        for model, n in window.items():
            loads[model] = loads.get(model, 0) + n
    total_loads = sum(loads.values())
    # A fresh server per window: each model's first load there is a cold start, not a swap.
    swaps = sum(n - 1 for window in window_loads for n in window.values() if n > 1)
    return SideFigures(
        classes=classes,
        requests=len(outcomes),
        tokens=sum(c.tokens for c in classes.values()),
        errors=sum(c.errors for c in classes.values()),
        loads=total_loads,
        loads_per_model=dict(sorted(loads.items())),
        swaps=swaps,
        swaps_per_100=100 * swaps / len(outcomes) if outcomes else math.nan,
        batch_in_trace=batch_in_trace,
        error_examples=sorted({o.error for o in outcomes if o.error})[:10],
    )


def _headline(side: SideFigures) -> dict[str, float]:
    return {
        "interactive TTFT p95": side.classes["interactive"].ttft_p95_s,
        "agent TTFT p95": side.classes["agent"].ttft_p95_s,
        "swaps per 100 requests": side.swaps_per_100,
        "tokens delivered": float(side.tokens),
    }


def ratios(
    corral: SideFigures, llama: SideFigures, trace: str = "team"
) -> dict[str, tuple[float, bool]]:
    """Each of ``trace``'s targets' ratio, Corral over llama.cpp, and whether it is met."""
    mine, theirs = _headline(corral), _headline(llama)
    found = {}
    for name, at_most, target in TARGETS[trace]:
        if not theirs[name]:
            # No ratio against nothing: an "at most" target (swaps) is met only by nothing too.
            found[name] = (math.nan, at_most and not mine[name])
            continue
        ratio = mine[name] / theirs[name]
        found[name] = (ratio, ratio <= target if at_most else ratio >= target)
    return found


def _class_cells(f: ClassFigures) -> list[tuple[str, str]]:
    return [
        (
            "TTFT p50 / p95 / max (s)",
            f"{f.ttft_p50_s:.2f} / {f.ttft_p95_s:.2f} / {f.ttft_max_s:.2f}",
        ),
        ("requests sent / completed", f"{f.sent} / {f.completed}"),
        ("cut at the end (of which waiting)", f"{f.cut} ({f.waiting_at_end})"),
        ("tokens delivered", str(f.tokens)),
        ("errors", str(f.errors)),
    ]


def _side_cells(s: SideFigures) -> list[tuple[str, str]]:
    per_model = ", ".join(f"{model} {n}" for model, n in s.loads_per_model.items())
    return [
        ("requests sent", str(s.requests)),
        ("tokens delivered", str(s.tokens)),
        ("model loads", f"{s.loads} ({per_model})"),
        ("swaps (loads again in a window)", str(s.swaps)),
        ("swaps per 100 requests", f"{s.swaps_per_100:.1f}"),
        ("batch backlog left unsent", str(s.batch_in_trace - s.classes["batch"].sent)),
        ("errors", str(s.errors)),
    ]


def _rows(sides: dict[str, SideFigures]) -> Iterable[str]:
    yield "| class | figure | " + " | ".join(sides) + " |"
    yield "|---|---|" + "---:|" * len(sides)
    tables = [
        (cls, [_class_cells(side.classes[cls]) for side in sides.values()]) for cls in CLASSES
    ]
    tables.append(("all", [_side_cells(side) for side in sides.values()]))
    for name, cells in tables:
        for n, row in enumerate(zip(*cells, strict=True)):
            label = row[0][0]
            yield f"| {name if n == 0 else ''} | {label} | " + " | ".join(c for _, c in row) + " |"


def render(sides: dict[str, SideFigures], trace: str = "team") -> str:
    """The markdown tables: each side's figures, then (with two sides) the ratios against the
    issue's targets for ``trace``, the first side over the second."""
    lines = list(_rows(sides))
    if len(sides) == 2:
        corral, llama = sides.values()
        lines += ["", "| target | Corral / llama.cpp | target | met |", "|---|---:|---|---|"]
        for (name, at_most, target), (ratio, met) in zip(
            TARGETS[trace], ratios(corral, llama, trace).values(), strict=True
        ):
            sign = "≤" if at_most else "≥"
            lines.append(f"| {name} | {ratio:.2f} | {sign} {target} | {'yes' if met else 'no'} |")
        batch = corral.classes["batch"]
        # A backlog outlasts the window: every request sent must complete or be cut by the
        # window's end (counted, not delivered), none fail, and batch must not starve.
        served = batch.errors == 0 and batch.completed > 0
        lines.append(
            f"| batch served, none failed | {batch.completed} completed, {batch.cut} cut, "
            f"{batch.errors} failed | > 0, 0 failed | {'yes' if served else 'no'} |"
        )
        # The bound is the scheduler's (--schedule-wait-max, a load on top): read, not judged.
        lines.append(
            f"| batch longest wait | {batch.ttft_max_s:.2f} s | ≤ the documented bound | read it |"
        )
        errors = corral.errors + llama.errors
        lines.append(
            f"| errors, both sides | {corral.errors} + {llama.errors} | 0 | "
            f"{'yes' if errors == 0 else 'no'} |"
        )
    for name, side in sides.items():
        for example in side.error_examples:
            lines.append(f"\n{name} error: {example}")
    return "\n".join(lines)


class FairFigures(msgspec.Struct):
    light_p95_s: float  # the light key's time to first token p95, the heavy key running
    light_alone_p95_s: float  # the same without the heavy key (NaN: not run)
    heavy_tokens: int
    light_tokens: int
    errors: int


def fair_figures(with_heavy: list[Outcome], alone: list[Outcome], window_s: float) -> FairFigures:
    """One router's figures on the fair trace: its window with the heavy key, and its window
    of the light key alone (empty: not run)."""

    def key(outcomes: list[Outcome], name: str) -> ClassFigures:
        return _class_figures([o for o in outcomes if o.key == name], window_s)

    light, heavy = key(with_heavy, "light"), key(with_heavy, "heavy")
    return FairFigures(
        light_p95_s=light.ttft_p95_s,
        light_alone_p95_s=key(alone, "light").ttft_p95_s,
        heavy_tokens=heavy.tokens,
        light_tokens=light.tokens,
        errors=sum(o.error is not None for o in [*with_heavy, *alone]),
    )


def render_fair(runs: dict[str, FairFigures], corral: str, fifo: str) -> str:
    """The fair trace's table, one column per run, then its targets: ``corral``'s light key
    p95 with the heavy key over alone, and its heavy key's tokens over ``fifo``'s."""
    cells: list[tuple[str, Callable[[FairFigures], str]]] = [
        ("light key TTFT p95, heavy key on (s)", lambda f: f"{f.light_p95_s:.2f}"),
        ("light key TTFT p95 alone (s)", lambda f: f"{f.light_alone_p95_s:.2f}"),
        ("light key p95, on / alone", lambda f: f"{f.light_p95_s / f.light_alone_p95_s:.2f}"),
        ("heavy key tokens", lambda f: str(f.heavy_tokens)),
        ("light key tokens", lambda f: str(f.light_tokens)),
        ("errors", lambda f: str(f.errors)),
    ]
    lines = ["| figure | " + " | ".join(runs) + " |", "|---|" + "---:|" * len(runs)]
    lines += [
        f"| {name} | " + " | ".join(cell(f) for f in runs.values()) + " |" for name, cell in cells
    ]
    mine, theirs = runs.get(corral), runs.get(fifo)
    if mine is None:
        return "\n".join(lines)  # llama.cpp's router only: no target is Corral's to meet
    light = mine.light_p95_s / mine.light_alone_p95_s
    heavy = mine.heavy_tokens / theirs.heavy_tokens if theirs and theirs.heavy_tokens else math.nan
    errors = sum(f.errors for f in runs.values())
    lines += [
        "",
        "| target | figure | target | met |",
        "|---|---:|---|---|",
        f"| light key p95, heavy on / alone | {light:.2f} | ≤ {FAIR_LIGHT_MAX} | "
        f"{'yes' if light <= FAIR_LIGHT_MAX else 'no'} |",
        f"| heavy key tokens / under fifo | {heavy:.2f} | ≥ {FAIR_HEAVY_MIN} | "
        f"{'yes' if heavy >= FAIR_HEAVY_MIN else 'no'} |",
        f"| errors, every run | {errors} | 0 | {'yes' if errors == 0 else 'no'} |",
    ]
    return "\n".join(lines)
