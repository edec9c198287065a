"""A page is one program (site_tools/engine/program.py), and "every copy text runs" is a fact of the
build: a page whose plain block or listing fails, where the page does not say so, fails
``mkdocs build --strict`` -- a strict build of a scratch checkout with one page. The program's
reading and running without a build: tests/site_tools/test_program.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .test_new_chapter import scratch_checkout

SCRATCH = """# A scratch page

Some prose.

```python exec="on" source="above" session="s" result="text"
x = 41
print(x + 1)
```

The reader copies the next block too{marker}

```{info}
int("not a number")
```
"""


def _build(root: Path, tmp_path: Path, page: str) -> subprocess.CompletedProcess:
    """A strict build of the scratch checkout with one page, ``docs/scratch.md``."""
    (root / "docs" / "scratch.md").write_text(page, encoding="utf-8")
    config = root / "mkdocs.scratch.yml"
    others = sorted(
        p.relative_to(root / "docs").as_posix()
        for p in [*(root / "docs").rglob("*.md"), *(root / "docs").rglob("*.ipynb")]
        if p.name != "scratch.md"
    )
    config.write_text(
        "INHERIT: mkdocs.yml\nnav:\n  - scratch.md\nexclude_docs: |\n"
        + "".join(f"  /{p}\n" for p in others),
        encoding="utf-8",
    )
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONPATH=str(root),
        ATTENTION_EXEC_STORE=str(tmp_path / "store"),
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config.name, "-d", "site"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_copied_block_that_fails_fails_the_strict_build(tmp_path):
    root = scratch_checkout(tmp_path / "checkout")
    failing = _build(root, tmp_path, SCRATCH.format(marker=".", info="python"))
    log = failing.stdout + failing.stderr
    assert failing.returncode != 0, log[-3000:]
    assert "scratch.md: block 2 (plain) of the page's program" in log, log[-3000:]
    assert log.count("WARNING") == 1, log[-3000:]  # that block, nothing else
    assert "ValueError: invalid literal for int()" in log, log[-3000:]
    # An output that says it is pending (what ./dev.sh serve shows) fails the build too.
    pending = SCRATCH.format(marker=".", info="python").replace(
        'int("not a number")', "from site_tools.engine import store\nprint(store.PENDING)"
    )
    pending = pending.replace(
        "```python\nfrom", '```python exec="on" source="above" result="text"\nfrom'
    )
    failing = _build(root, tmp_path, pending)
    log = failing.stdout + failing.stderr
    assert failing.returncode != 0 and "an output is still pending" in log, log[-3000:]
    assert log.count("WARNING") == 1, log[-3000:]
    # The same page, saying what the block raises, builds; the build's run is recorded.
    info = 'python exec="on" source="above" session="s" raises="ValueError"'
    shown = _build(root, tmp_path, SCRATCH.format(marker=":", info=info))
    assert shown.returncode == 0, (shown.stdout + shown.stderr)[-3000:]
    copies = json.loads((root / "site" / "_copies" / "scratch.json").read_text("utf-8"))
    assert [(b["code"], b["status"]) for b in copies["blocks"]] == [
        ("x = 41\nprint(x + 1)", "ok"),
        ('int("not a number")', "raised as shown"),
    ]
    html = (root / "site" / "scratch" / "index.html").read_text("utf-8")
    assert "42" in html
