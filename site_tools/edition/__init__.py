"""The Chinese edition (``docs-zh/``, built by ``mkdocs.zh.yml`` into ``site/zh``): the
English site in Chinese, the same pages with the same code, and the tools that keep it so.

- ``pages``: a Chinese page and its English twin (paths, front matter, fences and prose,
  heading ids), and the English text its translation records (``stamp``, ``stale``,
  ``placeholder``).
- ``page_check``: is a Chinese page the English page in Chinese (the same code and
  heading ids, no English prose, the term table's words, the style).
- ``style``: spacing and punctuation of Chinese prose (autocorrect's rules, no stray
  line break).
- ``terms``: the term table ``i18n/terms.zh.yml`` and the glossary generated from it.
- ``comments``: the listings' comments in Chinese (``i18n/comments.zh.yml``), written into
  the built pages' HTML and copy texts.
- ``diagrams``: ``diagrams/zh/`` from the drawings and ``i18n/diagrams.zh.yml``.
- ``banners``: the banner above a page whose translation is pending or older.
- ``__main__``: the command line, ``python -m site_tools.edition stale|check PAGE|…``.

What the build calls is here: :func:`banner`, :func:`chinese_listings`,
:func:`chinese_copies` and ``PAGE_SUFFIXES``.
"""

from site_tools.edition.banners import banner
from site_tools.edition.comments import chinese_copies, chinese_listings
from site_tools.edition.pages import PAGE_SUFFIXES

__all__ = ["PAGE_SUFFIXES", "banner", "chinese_copies", "chinese_listings"]
