"""The two editions in the browser (tests/site/test_edition_zh.py checks the Chinese edition
on the built pages): the Chinese search finds Chinese pages; the language switch, clicked,
leads to the same page in the other edition and back."""

from __future__ import annotations

from site_tools.edition import pages

SEARCHES = ["注意力", "掩码", "多头", "softmax"]


def test_chinese_search_finds_chinese_pages(browser, site_url):
    from .visit import _new_context, _settle

    problems: list[str] = []
    context = _new_context(browser, site_url, problems)
    page = context.new_page()
    page.goto(site_url + "zh/")
    _settle(page)
    found = {}
    for query in SEARCHES:
        page.click("input.md-search__input")
        page.fill("input.md-search__input", query)
        # Material searches on key events; an IME's Chinese comes with them, fill() not
        page.press("input.md-search__input", "End")
        page.wait_for_selector(".md-search-result__item", timeout=15_000)
        titles = page.locator(".md-search-result__item h1, .md-search-result__item h2")
        links = page.locator(".md-search-result__item a").evaluate_all(
            "(links) => links.map((a) => a.href)"
        )
        found[query] = (titles.count(), links)
        assert links and all("/zh/" in href for href in links), (query, links[:5])
        assert any(pages.HAN.search(t) for t in titles.all_inner_texts()), query
    context.close()
    assert problems == []
    print({q: n for q, (n, _) in found.items()})


def test_the_language_switch_clicked(browser, site_url):
    from .visit import _new_context, _settle

    problems: list[str] = []
    context = _new_context(browser, site_url, problems)
    page = context.new_page()
    page.goto(site_url + "chapters/masks/#causal")
    _settle(page)
    page.hover(".md-header__option .md-select")
    page.click("a.edition-link[hreflang='zh']")
    _settle(page)
    assert page.url == site_url + "zh/chapters/masks/"
    assert page.locator("article h1").inner_text().startswith("掩码")
    page.hover(".md-header__option .md-select")
    page.click("a.edition-link[hreflang='en']")
    _settle(page)
    assert page.url == site_url + "chapters/masks/"
    context.close()
    assert problems == []
