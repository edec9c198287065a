"""Root causes first: turn the facts a module check observed into findings.

A fact is one observation (``"leak"``: an output depends on a later token).
Some facts point at a mistake directly (``"split"``: the rows of the queries
are built from the wrong tokens); others are symptoms that several mistakes
produce. The roots below are tried in order; each becomes a finding when one
of its own facts was seen, and takes the symptoms it explains, so that a
wrong head split is reported once, with the leak and the broken equivariance
under it.
"""

from __future__ import annotations

from ..findings import Finding
from ..lang import join, tr
from .facts import Facts

__all__ = ["ROOTS", "resolve"]

_EVERYTHING = {
    "equivariance", "leak", "padding", "batch", "isolated", "weights-sum",
    "heads-shared", "mask-shapes", "nan", "uniform", "ignored", "inverted",
    "attend-B", "crash", "keyT", "cross",
}  # fmt: skip
_SPLITS = {"split", "attend-H", "merge", "heads-shared", "keyT", "sdim"}
_MASKING = {"leak", "padding", "nan", "uniform", "weights-sum", "mask-shapes"}

# (finding id, facts that show this mistake, symptoms it explains)
ROOTS = [
    ("dropout-in-eval", ["dropout"], {"weights-sum"}),
    # no mistake inside one example makes the examples depend on each other,
    # so batch mixing explains every other observation, however it was made
    # (attention over the batch axis, or a reshape of (B, L, D) as (L, B, ...))
    ("batch-mixing", ["attend-B", "batch"], _EVERYTHING | _SPLITS),
    ("head-split", ["split", "attend-H", "merge", "heads-shared"], _EVERYTHING),
    ("wrong-transpose", ["keyT"], _EVERYTHING),
    # a softmax over the queries mixes them: each output then depends on
    # other query tokens, with a context too
    ("softmax-dim", ["sdim"], _MASKING | {"heads-shared", "equivariance", "cross"}),
    ("mask-inverted", ["inverted"], _MASKING),
    ("mask-ignored", ["ignored"], _MASKING),
    ("weights-not-normalized", ["weights-sum"], {"leak", "padding"}),
    # a fill seen on a query that the inverted mask leaves no key
    ("nan-fully-masked", ["nan", "fill-nan"], set()),
    ("fully-masked-uniform", ["uniform", "fill-uniform"], set()),
    ("future-leak", ["leak"], {"padding"}),
    ("missing-scale", ["scale-none"], set()),
    ("wrong-scale", ["scale-wrong"], set()),
]


def resolve(facts: Facts) -> list[Finding]:
    """The findings, root causes first, each with the symptoms it explains
    (``"crash"``: the errors raised with masks)."""
    left = {k: v for k, v in facts.seen.items() if v}
    crashes = list(facts.crashes)
    findings = []
    for fid, shows, explains in ROOTS:
        if fid == "head-split" and "sdim" in left:
            shows = [s for s in shows if s != "heads-shared"]
        shown = [s for s in shows if s in left]
        if not shown:
            continue
        seen = [left.pop(s) for s in shown]
        fix = next((facts.fixes[s] for s in shown if s in facts.fixes), None)
        symptoms = [left.pop(s) for s in sorted(explains) if s in left]
        if "crash" in explains:
            symptoms += crashes
            crashes = []
        findings.append(Finding(fid, join(seen, "; "), symptoms, fix))
    if crashes:
        findings.append(Finding("shape", crashes[0], crashes[1:]))
    if left:
        texts = list(left.values())
        findings.append(
            Finding(
                "unexplained",
                tr("{text}, and no known mistake explains it", text=texts[0]),
                texts[1:],
            )
        )
    return findings
