"""site_tools.engine.markup without a build: where BeautifulSoup's elements stand in
the page's text, and edits that leave every other byte as it was."""

from __future__ import annotations

import pytest

from site_tools.engine.markup import MarkupError, Only, Source

PAGE = (
    '<div class="a"><p title="x > y">one <a href="#">#</a></p>\n'
    '<div class="b"><div>inner</div><img src="i.png" alt=""></div>'
    '<svg viewBox="0 0 2 1"><path d="M0 0"/></svg></div>'
)


def test_an_element_stands_where_its_tags_are():
    page = Source(PAGE)
    outer = page.soup.find("div", class_="a")
    assert (page.start(outer), page.end(outer)) == (0, len(PAGE))
    paragraph = page.soup.find("p")  # a ">" inside a quoted value does not end its start tag
    assert page.text[page.start(paragraph) : page.inner_start(paragraph)] == '<p title="x > y">'
    box = page.soup.find("div", class_="b")  # its end tag, not its inner div's
    assert page.text[page.inner_end(box) :].startswith("</div><svg")
    for void in (page.soup.find("img"), page.soup.find("path")):  # no end tag
        assert page.end(void) == page.inner_start(void) == page.inner_end(void)
    svg = page.soup.find("svg")  # the page's own bytes: viewBox, not the parser's viewbox
    assert page.text[page.start(svg) : page.end(svg)].startswith('<svg viewBox="0 0 2 1">')


def test_a_text_node_stands_between_the_tags_around_it():
    page = Source(PAGE)
    hash_sign = page.soup.find("a").string
    start, end = page.string_span(hash_sign)
    assert page.text[start:end] == "#"
    one = page.soup.find("p").contents[0]
    assert page.text[slice(*page.string_span(one))] == "one "


def test_edits_change_only_their_bytes():
    page = Source(PAGE)
    link = page.soup.find("a")
    page.insert(page.inner_start(link) - 1, ' data-x="1"')
    page.replace(*page.string_span(link.string), "6")
    assert page.edited() == PAGE.replace('<a href="#">#</a>', '<a href="#" data-x="1">6</a>')
    page.replace(0, 3, "")
    page.replace(1, 2, "")
    with pytest.raises(MarkupError, match="overlap"):
        page.edited()


def test_only_builds_what_it_is_asked_for():
    page = Source(PAGE, Only(lambda name, attrs: name == "p"))
    assert [t.name for t in page.soup.find_all(True)] == ["p", "a"]
    paragraph = page.soup.find("p")
    assert page.text[page.start(paragraph) : page.end(paragraph)].endswith("#</a></p>")


def test_an_end_tag_that_is_not_where_the_parse_put_it_is_an_error():
    # html.parser reads "</DIV>" as the end of the box; a search for "</div" does not
    page = Source('<div class="b">x</DIV><p>y</p></div>')
    with pytest.raises(MarkupError, match="end tag"):
        page.end(page.soup.find("div"))
