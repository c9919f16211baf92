"""Side-by-side tables: Corral's figure, the other server's, their ratio and the target."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Target", "print_comparison"]


@dataclass(frozen=True)
class Target:
    ratio: float  # Corral's figure over the other's
    at_most: bool = False  # True: a time or a size, where lower is better
    within: bool = False  # True: a reading of the same thing, off by at most 1 - ratio either way


def print_comparison(
    results: dict[str, dict[str, float]], targets: dict[str, Target], digits: int = 1
) -> None:
    """One row per metric of the first server; the ratio is the first one's over the second's."""
    names = list(results)
    width = max(16, *(len(name) + 2 for name in names))
    print(
        f"{'metric':<26}"
        + "".join(f"{name:>{width}}" for name in names)
        + ("   ratio  target" if len(names) >= 2 else "")
    )
    first = results[names[0]]
    for metric in first:
        row = f"{metric:<26}" + "".join(
            f"{results[n].get(metric, float('nan')):>{width}.{digits}f}" for n in names
        )
        if len(names) >= 2 and results[names[1]].get(metric):
            ratio = first[metric] / results[names[1]][metric]
            target = targets.get(metric)
            if target is None:
                verdict = ""
            else:
                if target.within:
                    met, sign = abs(ratio - 1) <= 1 - target.ratio, "~="
                    shown = f"1 +/- {1 - target.ratio:.2f}"
                else:
                    met = ratio <= target.ratio if target.at_most else ratio >= target.ratio
                    sign, shown = ("<=" if target.at_most else ">="), f"{target.ratio:.2f}"
                verdict = f"  {sign} {shown} {'met' if met else 'MISSED'}"
            row += f"   {ratio:5.2f}{verdict}"
        print(row)
