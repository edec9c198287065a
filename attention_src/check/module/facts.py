"""What the module check knows before it runs anything: the sizes it checks a
module at, the properties it checks (each by an id, with the sentence the
report lists), and ``Facts``, what it gathers while it runs: observations by
fact id (``"leak"``: an output depends on a later token; see ``resolve`` for
which findings they become), errors seen with masks, notes, and the ids of
the checks that were run."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..lang import tr

__all__ = ["B", "L", "CHECKS", "CAUSAL_CHECKS", "PLAIN", "ATTENTION", "Facts"]

B, L = 2, 5  # the batch and the length a module is checked at

CHECKS = {  # check id: what the report lists
    "deterministic": "eval() is deterministic",
    "shape": "the output has the shape of x",
    "batch": "the examples of a batch stay apart (by gradient)",
    "sees-others": "every token sees the others (by gradient)",
    "equivariance": "permuting the tokens permutes the outputs",
    "causal-mask": "no output depends on a later token under a causal mask "
    "(by gradient)",
    "mask-layouts": "a (B, 1, L, L) mask gives what the same (L, L) mask gives",
    "padding": "padding leaves the real tokens' outputs unchanged",
    "fully-masked": "a query with no allowed key gets no weight",
    "weights-sum": "the rows of returned weights sum to 1",
    # what the attention computations let it check (trace_facts measures them)
    "scale": "the scores are scaled by 1/sqrt(head width)",
    "softmax-dim": "the softmax runs over the keys",
    "token-rows": "each query and key row comes from its own token, each output "
    "token from its own position of every head",
    "heads-apart": "the heads read separate features",
    "context": "with a context, each output uses its own query only",
}
CAUSAL_CHECKS = {  # what two checks say of a module with causal attention built in
    "sees-others": "every token sees the earlier ones (by gradient)",
    "equivariance": "a prefix run alone gives the same outputs",
}
PLAIN = [  # the checks of every module, in the report's order
    "deterministic", "shape", "batch", "sees-others", "equivariance",
    "causal-mask", "mask-layouts", "padding", "fully-masked", "weights-sum",
]  # fmt: skip
ATTENTION = ["scale", "softmax-dim", "token-rows", "heads-apart"]  # if it is seen


@dataclass
class Facts:
    """What a module check gathered. ``seen``: fact id -> the sentence that
    says what was observed (``resolve`` turns them into findings); ``crashes``:
    errors raised with masks; ``notes``: remarks for the report; ``checks``:
    the ids of the checks run, in order (``CHECKS``); ``causal``: the module
    has causal attention built in (two checks are worded for it); ``fixes``:
    fact id -> a fix for what was seen, where the finding's own would not
    fit."""

    seen: dict[str, str] = field(default_factory=dict)
    crashes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=lambda: list(PLAIN))
    causal: bool = False
    fixes: dict[str, str] = field(default_factory=dict)  # fact id: its own fix

    def add(self, *checks: str) -> None:
        """Run these checks too."""
        self.checks += checks

    def drop(self, *checks: str) -> None:
        """Take these checks off the list (they could not be run)."""
        self.checks = [c for c in self.checks if c not in checks]

    def copy(self) -> Facts:
        return Facts(
            dict(self.seen),
            list(self.crashes),
            list(self.notes),
            list(self.checks),
            self.causal,
            dict(self.fixes),
        )

    def sentences(self) -> list[str]:
        """The checks run, as the report lists them (in the current language)."""
        words = {**CHECKS, **CAUSAL_CHECKS} if self.causal else CHECKS
        return [tr(words[c]) for c in self.checks]
