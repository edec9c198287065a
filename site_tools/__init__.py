"""Glue between the book's pages and the build: nothing here is taught.

- ``fences.formatter``: the site's Python fence (markdown-exec's public API, our
  own runner), plus ``raises="Error"`` for a block that is meant to fail (a
  pitfall shown live); output boxes are marked ``exec-output``.
- ``copytext``: what each block's copy button gives the reader (listings copy
  with their imports and helpers), read back from the built HTML and written
  to ``site/_copies/``.
- ``copyrun``: runs those copy texts, one fresh interpreter per page
  (``python -m site_tools.engine.copyrun site/_copies/*.json``).
- ``deps``: which pages an edit in ``attention_src`` makes stale.
- ``figures.figure_html``: a matplotlib figure as an ``<img>`` with alt text,
  byte-identical from build to build.
- ``hooks``: MkDocs hooks (fresh ``attention_src`` on every rebuild, listing
  copies, copy files, code-edit reloads, notebook cache keyed on the code).
- ``measure``: build and reload times (``python -m site_tools.measure``).
"""
