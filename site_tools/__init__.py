"""Glue between the book's pages and the build: nothing here is taught.

- ``fences.formatter``: markdown-exec's Python fence, plus ``raises="Error"``
  for a block that is meant to fail (a pitfall shown live).
- ``figures.figure_html``: a matplotlib figure as an ``<img>`` with alt text,
  byte-identical from build to build.
- ``hooks``: MkDocs hooks (fresh ``attention_src`` on every rebuild).
"""
