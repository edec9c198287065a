"""The check page's example models ship with the package, as text under
attention_src/check/examples/ (package data, not modules: a reader's copy of the page reads
them from the installed package). Each is the zoo case of the same name, byte for byte, so
that the zoo's tests are the examples' tests; and the pages read no file of tests/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "attention_src" / "check" / "examples"
ZOO = ROOT / "tests" / "check" / "check_zoo"
PAGES = [ROOT / e / "chapters" / "check-your-attention.md" for e in ("docs", "docs-zh")]


def test_each_example_is_its_zoo_case():
    shipped = sorted(EXAMPLES.glob("*.py.txt"))
    assert len(shipped) == 5, shipped
    for path in shipped:
        case = ZOO / path.name.removesuffix(".txt")
        assert path.read_bytes() == case.read_bytes(), f"{path.name} differs from {case}"
    assert not list(EXAMPLES.glob("*.py")), "a .py file here would be a module of the package"


def test_the_pages_use_every_example_and_no_test_file():
    names = {p.name.removesuffix(".py.txt") for p in EXAMPLES.glob("*.py.txt")}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        code = "\n".join(re.findall(r"```python[^\n]*\n(.*?)```", text, flags=re.S))
        assert "check_zoo" not in code and "tests/" not in code, page
        used = set(re.findall(r'"(d_[a-z_]+)(?:\.py\.txt|\.py)?"', code))
        assert names <= used, (page, names - used)
