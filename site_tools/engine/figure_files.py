"""Pictures as files: a page's data-URI pictures become files named by their hash.

The pictures of a page (a built figure's SVG, a notebook's PNG) are files the page
references, named by a hash of their bytes, rather than data URIs in its HTML: a page
is about half as heavy, a picture is fetched once for every page that shows it, and a
picture below the fold only when the reader scrolls to it (``loading="lazy"``; its
width and height are given, so that the text does not move when it arrives). Each
edition has its own folder, so that either builds and is served alone.

The HTML is read with BeautifulSoup (site_tools.engine.markup: the ``<img>`` tags and
their ``src``) and the page's text is changed only inside those tags; picture sizes
come from ``imagesize`` (an SVG's from its root element's width and height, else its
viewBox; rounded to whole CSS pixels, as a browser lays them out).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
from pathlib import Path

import imagesize

from site_tools.engine.markup import Source

FIGURE_DIR = "assets/figures"
SUFFIX = {"svg+xml": "svg", "png": "png", "gif": "gif"}
MIME = {suffix: f"image/{kind}" for kind, suffix in SUFFIX.items()}
_DATA = re.compile(r"data:image/(?P<kind>svg\+xml|png|gif);base64,(?P<data>[A-Za-z0-9+/=\s]+)")
_FILE = re.compile(rf"(?P<up>(?:\.\./)*){FIGURE_DIR}/(?P<name>[0-9a-f]{{16}}\.(?:svg|png|gif))")
_SVG_ROOT = re.compile(rb"""<svg\b(?:[^>"']|"[^"]*"|'[^']*')*>""")
_NUMBER = rb"([-+]?[\d.]+(?:[eE][-+]?\d+)?)"
_VIEW_BOX = re.compile(rb"""\sviewBox=["']\s*""" + rb"[\s,]+".join([_NUMBER] * 4))


def picture_size(data: bytes) -> tuple[int, int] | None:
    """A picture's width and height in CSS pixels, as a browser shows it (None when its
    bytes do not say). An SVG's are its root element's ``width`` and ``height``, else its
    ``viewBox``'s (imagesize reads the first ``width=`` of the file's first 1024 bytes,
    which may be a child's, and no ``viewBox``)."""
    if data.lstrip()[:1] == b"<":  # an SVG (XML)
        root = _SVG_ROOT.search(data)
        if root is None:
            return None
        width, height = imagesize.get(io.BytesIO(root[0]))
        if width < 0 or height < 0:
            box = _VIEW_BOX.search(root[0])
            if box is None:
                return None
            width, height = float(box[3]), float(box[4])
    else:
        width, height = imagesize.get(io.BytesIO(data))
    if width < 0 or height < 0:
        return None
    return max(1, round(width)), max(1, round(height))


class FigureFiles:
    """The pictures of one build of one edition: ``assets/figures/<name>`` -> bytes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def clear(self) -> None:
        self.files.clear()

    def swap(self, html: str, page_url: str) -> str:
        """The page with each data-URI picture turned into a reference to
        ``assets/figures/<sha256[:16]>.<suffix>`` of its edition, relative to the page,
        loaded lazily, with its width and height (written by :meth:`write`). A picture
        whose size its bytes do not give stays inline."""
        if "data:image/" not in html:
            return html
        prefix = "../" * page_url.count("/")
        page = Source(html, "img")
        for img in page.soup.find_all("img"):
            source = _DATA.fullmatch(str(img.get("src", "")))
            start, end = page.start(img), page.inner_start(img)
            tag = html[start:end]
            at = tag.find(' src="data:image/')
            if source is None or at < 0:
                continue
            data = base64.b64decode(re.sub(r"\s", "", source["data"]), validate=True)
            size = picture_size(data)
            if size is None:
                continue
            name = f"{FIGURE_DIR}/{hashlib.sha256(data).hexdigest()[:16]}"
            name += f".{SUFFIX[source['kind']]}"
            if self.files.setdefault(name, data) != data:  # 64 bits of sha256 collided
                raise ValueError(f"{page_url}: two different pictures are both named {name}")
            added = f' src="{prefix}{name}"'
            if "width" not in img.attrs and "height" not in img.attrs:
                added += f' width="{size[0]}" height="{size[1]}"'
            if "loading" not in img.attrs:
                added += ' loading="lazy" decoding="async"'
            closing = tag.index('"', at + len(' src="')) + 1
            page.replace(start + at, start + closing, added)
        return page.edited()

    def write(self, site_dir) -> int:
        """This build's pictures under the edition's ``assets/figures/``; a file already
        there with the same name has the same bytes (the name is their hash). Returns
        how many files were written."""
        written = 0
        for name, data in sorted(self.files.items()):
            path = Path(site_dir) / name
            if path.exists() and path.stat().st_size == len(data):
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            written += 1
        return written

    def inline(self, html: str, site_dir) -> str:
        """The page with its picture files back as data URIs, read from the edition's
        ``assets/figures/``: for a copy of the page that stands alone (its notebook)."""
        if FIGURE_DIR not in html:
            return html
        page = Source(html, "img")
        for img in page.soup.find_all("img"):
            found = _FILE.fullmatch(str(img.get("src", "")))
            if found is None:
                continue
            name = found["name"]
            data = self.files.get(f"{FIGURE_DIR}/{name}")
            if data is None:
                data = (Path(site_dir) / FIGURE_DIR / name).read_bytes()
            uri = f"data:{MIME[name.rsplit('.', 1)[1]]};base64,"
            uri += base64.b64encode(data).decode("ascii")
            start = page.start(img)
            at = html.index(found[0], start, page.inner_start(img))
            page.replace(at, at + len(found[0]), uri)
        return page.edited()
