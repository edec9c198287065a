"""The labs (Jupyter notebooks rendered by mkdocs-jupyter): what the build adds to them.

- :func:`key_cache_on_code`: mkdocs-jupyter keys its executed notebooks on their bytes
  only; its cache folder is named after the package code, so that a lab runs again when
  the code it imports changes (the labs import ``attention_src`` as a whole), and one
  folder per edition: mkdocs-jupyter (0.26.3, pinned) evicts, after a build, every
  executed notebook of its folder that the build did not use, so the Chinese build of
  ``./dev.sh build`` (and of the tests) would otherwise evict the English labs.
- :func:`copy_buttons`: a lab's copy buttons (mkdocs-jupyter 0.26.3's
  ``<clipboard-copy>``) are named "Copy to Clipboard" by an aria-label in every edition,
  and show "Copied!" for a second after a click: a visible text their name does not
  contain (label-content-name-mismatch, even with the notice aria-hidden). The name
  comes from the button's own words instead: the notice, then "Copy to clipboard" for
  screen readers only (a11y.css), in the edition's language; a screen reader hears the
  copy from the live region of figures.js.
- :func:`without_empty_scripts`: mkdocs-jupyter loads MathJax from its option's URL,
  which is empty here (KaTeX typesets the labs): a ``<script src="">`` that would fetch
  the page itself again.

The markup is read with BeautifulSoup (site_tools.engine.markup); only the tags it
finds are rewritten.
"""

from __future__ import annotations

import logging
import shutil
from html import escape
from pathlib import Path

from site_tools.engine.markup import Source

log = logging.getLogger("mkdocs.plugins.attention")
NOTEBOOK_CACHE = Path(".cache") / "mkdocs-jupyter"
CLIPBOARD_WORDS = {"en": ("Copy to clipboard", "Copied!"), "zh": ("复制", "已复制")}


def key_cache_on_code(plugin, edition: str, keep_cached: bool) -> None:
    """Point mkdocs-jupyter's cache at the folder of the package's code and ``edition``;
    drop the folders of older code. ``keep_cached``: a ``--dirty`` rebuild, which renders
    no notebook (mkdocs-jupyter would then evict the executed copies it did not use)."""
    if plugin is None or not plugin.config.get("cache"):
        return
    import attention_src
    from attention_src.machinery.source import code_fingerprint

    code = code_fingerprint(attention_src)[:16]
    folder = NOTEBOOK_CACHE / f"{code}-{edition}"
    plugin.config["cache_dir"] = str(folder)
    if keep_cached and hasattr(plugin, "_used_cache_paths"):
        # mkdocs-jupyter has no public way to keep an executed notebook a build did not
        # render; its set of used cache files is what its eviction reads
        # (tests/site_tools/test_serve_after_build.py checks that a --dirty rebuild keeps them).
        plugin._used_cache_paths.update(Path(folder).glob("*.json"))
    if NOTEBOOK_CACHE.is_dir():  # outputs of older code are never read again
        for old in NOTEBOOK_CACHE.iterdir():
            if old.is_dir() and not old.name.startswith(f"{code}-"):
                shutil.rmtree(old, ignore_errors=True)
            elif old.suffix == ".json":
                old.unlink()


def copy_buttons(html: str, language: str) -> str:
    """A lab's copy buttons named by their words in the page's language; mkdocs-jupyter's
    stray ``,`` attribute gone."""
    if 'aria-label="Copy to Clipboard"' not in html:
        return html
    name, notice = CLIPBOARD_WORDS[language]
    page = Source(html, "clipboard-copy")
    for button in page.soup.find_all("clipboard-copy"):
        old = button.find("span", class_="notice")
        if button.get("aria-label") != "Copy to Clipboard" or old is None:
            continue
        if old.get_text() != "Copied!":
            continue
        attrs = {k: v for k, v in button.attrs.items() if k not in {"aria-label", ","}}
        opening = "<clipboard-copy" + "".join(
            f' {key}="{escape(" ".join(value) if isinstance(value, list) else value)}"'
            for key, value in attrs.items()
        )
        page.replace(page.start(button), page.inner_start(button), opening + ">")
        words = f'<span class="notice" hidden>{notice}</span>'
        words += f'<span class="a11y-visually-hidden">{name}</span>'
        page.replace(page.start(old), page.end(old), words)
    html = page.edited()
    if 'aria-label="Copy to Clipboard"' in html:  # another mkdocs-jupyter's markup
        log.warning("a lab's copy button kept its English name: see site_tools.outputs.labs")
    return html


def without_empty_scripts(html: str) -> str:
    """The page without ``<script src="">`` tags (and the line break after one)."""
    if 'src=""' not in html and "src=''" not in html:
        return html
    page = Source(html, "script")
    for script in page.soup.find_all("script", src=True):
        if not script["src"].strip():
            end = page.end(script)
            page.replace(page.start(script), end + (html[end : end + 1] == "\n"), "")
    return page.edited()
