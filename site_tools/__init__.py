"""The site's build: nothing here is taught. A map of the package:

- ``mkdocs_plugin``: the MkDocs adapter, one plugin object (``attention`` under
  ``plugins:``) that wires MkDocs' events to the modules below and holds the state of
  the builds of one process.
- ``prebuild``: before any engine renders, every page's program runs in a fresh
  interpreter (``python -m site_tools.prebuild``); rendering then only reads the store.
- ``after_build``: what needs the whole finished site (pictures as files, numbers
  across pages, the chapters' notebooks, the wheel, the live models, pruning),
  ``python -m site_tools.after_build SITE_DIR`` after another engine.
- ``serve_later``: under ``./dev.sh serve``, that work in a thread that yields to the
  next rebuild; Material's search index written after the build.
- ``engine/``: one page through the build.
  ``blocks`` (the one reader of fenced blocks), ``program`` (a page as one program:
  its copy texts, run in a fresh interpreter), ``store`` (the store of executed
  outputs), ``deps`` (what a page's outputs depend on), ``parallel`` (pages run side
  by side), ``fences`` (the Python fence: markdown-exec's formatter reading the store),
  ``pages`` (a Markdown extension: fresh sessions, figure captions and alt texts),
  ``numbering`` (chapter, figure and listing numbers), ``copytext`` (what a listing's
  copy button gives; ``_copies/``), ``copyrun`` (runs copy texts as a reader would),
  ``figure_files`` (pictures as hashed files), ``markup`` (where tags are in a page's
  HTML, read with BeautifulSoup), ``rebuilds`` (serve's rebuilds after a code edit).
- ``outputs/``: what pages print and what the build makes for readers.
  ``figures`` (a matplotlib figure as an ``<img>``), ``explorer`` and ``live_small``
  (in-page widgets), ``live_models`` (the in-browser models' weights), ``notebooks``
  (each chapter as a notebook) and ``wheel`` (the package under ``downloads/``),
  ``labs`` (mkdocs-jupyter's labs: cache, copy buttons).
- ``edition/``: the Chinese edition's tools (``python -m site_tools.edition``).
- ``measure``: build and reload times (``python -m site_tools.measure``).
- ``engine_compare``: two builds of the site compared page by page on what the
  reader gets (``python -m site_tools.engine_compare SITE_A SITE_B``).
"""
