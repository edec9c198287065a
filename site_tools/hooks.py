"""MkDocs hooks (see ``hooks:`` in mkdocs.yml)."""

from __future__ import annotations

import sys


def on_pre_build(config, **kwargs) -> None:
    # Under `mkdocs serve` the Python process lives on between rebuilds. Drop
    # the book's modules so that the next build imports the edited source
    # instead of running stale code on the pages.
    for name in list(sys.modules):
        if name.split(".")[0] == "attention_src" or name == "site_tools.figures":
            del sys.modules[name]
