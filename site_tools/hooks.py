"""MkDocs hooks (see ``hooks:`` in mkdocs.yml)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_DIRS = (ROOT / "attention_src", ROOT / "site_tools")


def on_pre_build(config, **kwargs) -> None:
    # Under `mkdocs serve` the Python process lives on between rebuilds. Drop
    # the book's modules so that the next build imports the edited source
    # instead of running stale code on the pages.
    for name in list(sys.modules):
        if name.split(".")[0] == "attention_src" or name == "site_tools.figures":
            del sys.modules[name]


def _newest_code_mtime() -> float:
    return max((p.stat().st_mtime for d in CODE_DIRS for p in d.rglob("*.py")), default=0.0)


def on_files(files, config, **kwargs):
    # `./dev.sh serve` runs `mkdocs serve --dirty`, which rebuilds only the
    # pages whose markdown changed -- fast, but an edit to attention_src would
    # leave the pages that include or import it stale. Mark those pages as
    # modified when the code is newer than their built HTML. (In a full build
    # every page is built anyway, so this changes nothing there.)
    newest = _newest_code_mtime()
    for file in files.documentation_pages():
        dest = Path(file.abs_dest_path)
        if not dest.exists() or dest.stat().st_mtime >= newest:
            continue
        if file.abs_src_path and "attention_src" in Path(file.abs_src_path).read_text("utf-8"):
            file.is_modified = lambda: True
    return files
