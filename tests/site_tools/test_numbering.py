"""site_tools.engine.numbering without a build: chapter numbers from the nav, figure
numbers from page order, references filled in, and what is wrong reported (as
warnings, which fail a strict build)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.utils.yaml import yaml_load

from site_tools.engine import numbering

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = {
    "chapters/masks/": ("6", "Masks"),
    "chapters/soft-lookup/": ("2", "Attention as a soft lookup"),
}


def _figure(ident: str | None, caption: str | None = "What to look at.") -> str:
    id_attr = f' id="{ident}"' if ident else ""
    cap = f"<figcaption>{caption}</figcaption>" if caption is not None else ""
    return f'<figure class="built-figure"{id_attr}><img src="x.svg" alt="a">{cap}</figure>'


def test_nav_titles_give_the_numbers():
    pages = [
        SimpleNamespace(title="6. Masks", url="chapters/masks/"),
        SimpleNamespace(title="Notation and shapes", url="notation/"),
        SimpleNamespace(title="12. Attention maps", url="chapters/attention-maps/"),
    ]
    got = numbering.nav_numbers(SimpleNamespace(pages=pages))
    assert got == {
        "chapters/masks/": ("6", "Masks"),
        "chapters/attention-maps/": ("12", "Attention maps"),
    }


def test_figures_are_numbered_in_page_order_with_the_chapter_number():
    html = _figure("fig-a") + "<p>text</p>" + _figure("fig-b")
    out = numbering.number_page(html, "chapters/masks/", NUMBERS)
    assert out.count('data-number="6.1"') == 1 and out.count('data-number="6.2"') == 1
    assert out.index("Figure 6.1") < out.index("Figure 6.2")
    assert '<span class="figure-number">Figure 6.2</span> — What to look at.' in out
    # a second pass (a rebuilt page) does not number again
    assert numbering.number_page(out, "chapters/masks/", NUMBERS) == out


def test_unnumbered_pages_number_figures_alone():
    out = numbering.number_page(_figure("fig-a"), "notation/", NUMBERS)
    assert 'data-number="1"' in out and "Figure 1</span>" in out


def test_references_are_filled_in():
    html = (
        '<p><a href="#fig-b">figure #</a>, <a href="../soft-lookup/#why">Chapter #</a>, '
        '<a href="../soft-lookup/">#. Attention as a soft lookup</a>, '
        '<a href="#x">C# stays</a>, <a href="#y">&#35;1 stays</a></p>'
        + _figure("fig-a")
        + _figure("fig-b")
    )
    out = numbering.number_page(html, "chapters/masks/", NUMBERS)
    assert ">figure 6.2</a>" in out
    assert ">Chapter 2</a>" in out
    assert ">2. Attention as a soft lookup</a>" in out
    assert ">C# stays</a>" in out and ">&#35;1 stays</a>" in out


def test_links_from_the_home_page_resolve():
    out = numbering.number_page('<a href="chapters/masks/">chapter #</a>', "", NUMBERS)
    assert ">chapter 6</a>" in out


def test_what_cannot_be_numbered_is_reported(caplog):
    html = (
        '<a href="#fig-missing">figure #</a><a href="../../notation/">page #</a>'
        '<a href="https://example.org/">#</a>' + _figure("fig-a", caption=None)
    )
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.numbering"):
        numbering.number_page(html, "chapters/masks/", NUMBERS)
    text = caplog.text
    assert "missing figure #fig-missing" in text
    assert "unnumbered page ../../notation/" in text
    assert "external link https://example.org/" in text
    assert "figure 6.1 (fig-a) has no caption" in text


def test_figures_on_other_pages_resolve_after_the_build(tmp_path, caplog):
    masks = numbering.number_page(_figure("fig-grid"), "chapters/masks/", NUMBERS)
    lookup = numbering.number_page(
        '<a href="../masks/#fig-grid">Figure #</a><a href="../masks/#fig-gone">figure #</a>',
        "chapters/soft-lookup/",
        NUMBERS,
    )
    assert numbering.PENDING in lookup
    for url, text in [("chapters/masks/", masks), ("chapters/soft-lookup/", lookup)]:
        (tmp_path / url).mkdir(parents=True)
        (tmp_path / url / "index.html").write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.numbering"):
        numbering.resolve_site(tmp_path, NUMBERS)
    out = (tmp_path / "chapters/soft-lookup/index.html").read_text("utf-8")
    assert ">Figure 6.1</a>" in out and numbering.PENDING not in out
    assert "missing figure chapters/masks/#fig-gone" in caplog.text


def test_every_chapter_in_the_nav_is_numbered_once():
    """The nav in mkdocs.yml numbers every chapter page, 1, 2, 3, … without gaps or repeats."""
    nav = yaml_load((ROOT / "mkdocs.yml").read_bytes())["nav"]  # MkDocs' own YAML loader

    def entries(items):
        for item in items:
            for title, value in item.items():
                if isinstance(value, list):
                    yield from entries(value)
                else:
                    yield title, value

    chapters = [(t, v) for t, v in entries(nav) if v.startswith("chapters/")]
    numbers = []
    for title, page in chapters:
        match = numbering.NAV_NUMBER.match(title)
        assert match, f"{page}: nav title {title!r} has no number"
        numbers.append(int(match.group(1)))
    assert numbers == list(range(1, len(chapters) + 1)), numbers


@pytest.mark.parametrize("text", ["#", "chapter #", "#. Masks", "(#)"])
def test_a_lone_hash_is_a_reference(text):
    assert numbering.LONE_HASH.search(text)


@pytest.mark.parametrize("text", ["C#", "##", "&#35;", "#x", "a#b"])
def test_other_hashes_are_not(text):
    assert not numbering.LONE_HASH.search(text)
