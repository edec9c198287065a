"""The findings of a check, and the report it hands back.

Every finding is of a kind in ``catalogue`` (a stable id, a one-line meaning,
the fix, and a link to the chapter section that teaches it), in the language
of the check. A finding is a *root cause*; what it broke
elsewhere (a property that failed, a shape that raised) is listed under it as
a symptom, not as a finding of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import zh
from .catalogue import KINDS, SITE_URL, Kind
from .lang import current, tr, use

__all__ = ["SITE_URL", "FINDINGS", "kinds", "Kind", "Finding", "Report"]

FINDINGS = {kind.id: kind for kind in KINDS}
_IN = {
    "en": FINDINGS,
    "zh": {
        k.id: Kind(k.id, *zh.FINDINGS[k.id], k.page, k.anchor, "zh") for k in KINDS
    },
}


def kinds(lang: str = "en") -> dict[str, Kind]:
    """``FINDINGS`` with the meanings, fixes and links of language ``lang``."""
    return _IN[lang]


@dataclass
class Finding:
    """A root cause: ``id`` (one of ``FINDINGS``), ``message`` (what is
    wrong, with the shapes it was seen on), the symptoms it explains, and,
    where the kind's fix would not fit what was seen (a softmax over scores
    laid out otherwise than ``(..., L, S)``), a fix of its own in the language
    of the message."""

    id: str
    message: str
    symptoms: list[str] = field(default_factory=list)
    own_fix: str | None = None

    def __post_init__(self):
        if self.id not in FINDINGS:
            raise ValueError(f"unknown finding id {self.id!r}")

    @property
    def link(self) -> str:
        return FINDINGS[self.id].link

    @property
    def fix(self) -> str:
        return self.own_fix or FINDINGS[self.id].fix

    def line(self, lang: str = "en") -> str:
        kind = kinds(lang)[self.id]
        with use(lang):
            return tr(
                "FINDING {id}: {message} — {fix} (see {link})",
                id=self.id,
                message=self.message,
                fix=self.own_fix or kind.fix,
                link=kind.link,
            )


@dataclass
class Report:
    """What a check found. ``findings`` is empty when nothing is wrong;
    ``convention`` is the mask convention used ("allow" or "block"), or
    ``None`` when it could not be told; ``checks`` lists the inputs (for a
    function) or the properties (for a module) that were checked; ``notes``
    are remarks that are not mistakes (what was not checked, how the
    convention was found); ``lang`` is the language its text is written in
    (by default the language of the check that made it)."""

    target: str
    findings: list[Finding]
    convention: str | None
    checks: list[str]  # the inputs (function) or properties (module) checked
    notes: list[str] = field(default_factory=list)
    decided_by: str = ""  # how the findings were decided, one line
    lang: str = field(default_factory=current)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def ids(self) -> list[str]:
        return [f.id for f in self.findings]

    def verdict(self) -> str:
        with use(self.lang):
            if self.ok:
                return tr(
                    "VERDICT: {target}: no mistakes found ({n} checks passed)",
                    target=self.target,
                    n=len(self.checks),
                )
            n, ids = len(self.findings), ", ".join(self.ids)
            if n == 1:
                return tr(
                    "VERDICT: {target}: 1 mistake found ({ids})",
                    target=self.target,
                    ids=ids,
                )
            return tr(
                "VERDICT: {target}: {n} mistakes found ({ids})",
                target=self.target,
                n=n,
                ids=ids,
            )

    def lines(self) -> list[str]:
        out = []
        with use(self.lang):
            for finding in self.findings:
                out.append(finding.line(self.lang))
                out.extend(
                    tr("    symptom: {symptom}", symptom=s)
                    for s in finding.symptoms
                )
            if self.decided_by:
                out.append(tr("how: {how}", how=self.decided_by))
            out.extend(tr("note: {note}", note=note) for note in self.notes)
        out.append(self.verdict())
        return out

    def text(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict:
        return {
            "findings": [
                {
                    "id": f.id,
                    "message": f.message,
                    "link": kinds(self.lang)[f.id].link,
                    "symptoms": list(f.symptoms),
                }
                for f in self.findings
            ],
            "convention": self.convention,
            "verdict": self.verdict(),
            "notes": list(self.notes),
            "checks": list(self.checks),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
