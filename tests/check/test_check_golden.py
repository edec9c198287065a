"""Every zoo case's English report, text and JSON, compared with the golden copy committed
in tests/check/check_golden/ (CPU): a change to the checker that changes what a reader is told
shows up here as a diff, case by case. The same report (computed once per case) is checked
against what the case declares: exactly the finding ids of EXPECTED, one finding per root
cause, each FINDING line with its fix and link, the CONVENTION and NOTE it names; a case
that declares KNOWN_WRONG = "why" is one the checker gets wrong today, a strict expected
failure. (test_check.py and test_check_decoder.py check the same on a GPU, where there is
one.)

To record them again after a deliberate change (and list each changed case in the commit):
    python -m tests.check.test_check_golden
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from attention_src.check import (
    FINDINGS,
    check_decode,
    check_function,
    check_gqa,
    check_module,
    check_rope,
)

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "tests" / "check" / "check_zoo"
GOLDEN = ROOT / "tests" / "check" / "check_golden"
LINE = re.compile(r"^FINDING ([a-z-]+): .+ — .+ \(see (https://\S+)\)$")


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"golden_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cases() -> list[Path]:
    out = []
    for path in sorted(ZOO.glob("[a-z]_*.py")):
        source = path.read_text(encoding="utf-8")
        if "EXPECTED_ERROR" not in source:  # a usage error: no report
            out.append(path)
    return out


def report_of(path: Path):
    """The English report of one zoo case, on the CPU, as the zoo's tests check it."""
    entry = _load(path)
    options = {**getattr(entry, "OPTIONS", {}), "device": "cpu"}
    kind = path.name[:2]
    if kind == "m_":
        return check_module(getattr(entry, getattr(entry, "TARGET", "MyMultiHead")), **options)
    if kind == "f_":
        return check_function(entry.attention, **options)
    if kind == "r_":
        return check_rope(entry.rope, **options)
    if kind == "g_":
        return check_gqa(entry.attention, **options)
    return check_decode(entry.decode, **options)


@functools.cache
def cpu_report(path: Path):
    """``report_of(path)``, computed once for both tests of a case."""
    return report_of(path)


def known_wrong(path: Path):
    """``KNOWN_WRONG = "why"`` in a zoo file, read without importing it, or None."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "KNOWN_WRONG" for t in targets):
            return ast.literal_eval(node.value)
    return None


def assert_declared(report, entry) -> None:
    """The report has what the zoo case declares (see the module's docstring)."""
    assert set(report.ids) == entry.EXPECTED, report.text()
    assert len(report.ids) == len(set(report.ids)), "one finding per root cause"
    assert report.ok == (not entry.EXPECTED)
    if hasattr(entry, "CONVENTION"):
        assert report.convention == entry.CONVENTION, report.text()
    if hasattr(entry, "NOTE"):  # what it found about how the code is called
        assert any(entry.NOTE in note for note in report.notes), report.text()
    for line in report.lines():
        if line.startswith("FINDING"):
            found = LINE.match(line)
            assert found, line
            assert found[2] == FINDINGS[found[1]].link


CASES = [p for p in _cases() if (GOLDEN / f"{p.stem}.txt").exists()]
DECLARED = [  # a case the checker gets wrong today: a strict expected failure
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=known_wrong(p)))
    if known_wrong(p)
    else p
    for p in _cases()
]


@pytest.mark.parametrize("path", DECLARED, ids=lambda p: p.stem)
def test_zoo_entry_gets_exactly_its_findings_on_the_cpu(path):
    assert_declared(cpu_report(path), _load(path))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_report_is_the_golden_one(path):
    report = cpu_report(path)
    assert report.text() + "\n" == (GOLDEN / f"{path.stem}.txt").read_text(encoding="utf-8")
    assert report.to_json() + "\n" == (GOLDEN / f"{path.stem}.json").read_text(encoding="utf-8")


def test_every_case_has_its_golden_report():
    missing = [p.stem for p in _cases() if p not in CASES]
    assert not missing, f"no golden report for {missing}: python -m tests.check.test_check_golden"


def _record(stems: list[str]) -> None:
    GOLDEN.mkdir(exist_ok=True)
    for path in _cases():
        if stems and path.stem not in stems:
            continue
        report = report_of(path)
        (GOLDEN / f"{path.stem}.txt").write_text(report.text() + "\n", encoding="utf-8")
        (GOLDEN / f"{path.stem}.json").write_text(report.to_json() + "\n", encoding="utf-8")
        print(path.stem, " ".join(report.ids) or "-")


if __name__ == "__main__":
    _record(sys.argv[1:])
