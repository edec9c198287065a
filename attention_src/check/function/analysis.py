"""Which known wrong variant explains the function's outputs: the simplest that
reproduces the most of them, or, where none does, the right computation with
another scale fitted input by input."""

from __future__ import annotations

from dataclasses import dataclass, field

from .cases import Case, same_kind
from .variants import Combo, all_combos, fit_scale

__all__ = ["Analysis", "best_combo", "analyse"]


@dataclass
class Analysis:
    """The variant that explains the outputs, and per case how it did."""

    cases: list[Case]
    combo: Combo
    scales: dict[int, float] = field(default_factory=dict)  # scale == "fit"

    def status(self, i: int, combo: Combo | None = None) -> str:
        combo = self.combo if combo is None else combo
        return self.cases[i].status(combo, self.scales.get(i))

    @property
    def matched(self) -> list[int]:
        return [i for i in range(len(self.cases)) if self.status(i) == "match"]


def best_combo(cases: list[Case]) -> Combo:
    """The simplest variant that explains the most outputs."""

    def score(combo):
        statuses = [c.status(combo) for c in cases]
        n_dev = len(combo.deviations())
        return statuses.count("match"), statuses.count("crash"), -n_dev

    best = max(all_combos(), key=score)  # the first of equals wins
    for axis in best.deviations():  # a deviation needs an output as evidence
        fixed = best.fixed(axis)
        evidence = any(
            c.status(best) == "match" and c.status(fixed) != "match" for c in cases
        )
        if not evidence:
            best = fixed
    return best


def analyse(cases: list[Case]) -> Analysis:
    analysis = Analysis(cases, best_combo(cases))
    matched = len(analysis.matched)
    if matched == sum(c.out is not None for c in cases):
        return analysis
    for base in dict.fromkeys([analysis.combo, Combo()]):  # another scale?
        fitted = Combo(**{**vars(base), "scale": "fit"})
        scales = {}
        for i, case in enumerate(cases):
            if case.out is not None and same_kind(case.out, case.q):
                inputs = (case.q, case.k, case.v, case.allow, case.is_causal)
                s = fit_scale(fitted, case.out, inputs, case.tol)
                if s is None and not scales:
                    break  # a scale would show on every input: not this one
                if s is not None:
                    scales[i] = s
        if len(scales) > matched:
            return Analysis(cases, fitted, scales)
    return analysis
