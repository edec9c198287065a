"""The audit helpers of tests/browser/a11y.py, on tiny pages: they find what they must find.

And two checks of the built site that the one visit of tests/browser/visit.py cannot
make: the header's icons at 390 px (a rule outside the WCAG tags), and a lab's copy button
after a click (its "Copied!" notice shows for a second)."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from tests.browser import a11y

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title>
<style>{css}</style></head><body><main><h1>A page</h1>
<p class="note">Some words in grey.</p>
<p>Text with <a href="#x">a link</a> inside it.</p></main></body></html>"""
LOW = "body{{color:#212121}} .note{{color:{grey};background:#f5f5f5}} a{{color:#3f51b5;{deco}}}"


def test_axe_is_the_pinned_release():
    head = a11y.AXE_JS.read_text(encoding="utf-8")[:40]
    assert head.startswith("/*! axe v4.14.1"), head


def test_run_axe_finds_low_contrast_and_bare_links(browser):
    page = browser.new_page()
    try:
        # #717171 on #f5f5f5 is 4.47:1 (AA needs 4.5:1); the link is told apart by colour alone
        page.set_content(PAGE.format(css=LOW.format(grey="#717171", deco="text-decoration:none")))
        found = {v["id"]: v for v in a11y.run_axe(page)}
        assert set(found) == {"color-contrast", "link-in-text-block"}, found
        assert found["color-contrast"]["targets"] == [".note"]
        assert "4.47" in found["color-contrast"]["message"]
        assert found["color-contrast"]["impact"] == "serious"
        # the same page with a darker grey and an underlined link passes
        page.set_content(PAGE.format(css=LOW.format(grey="#5d5d5d", deco="")))
        assert a11y.run_axe(page) == []
    finally:
        page.close()


def test_audit_variants_sees_the_dark_scheme(browser):
    """A colour that passes in light and fails in dark is found in dark only."""
    css = (
        ".note{color:#595959;background:#fff}"
        "@media (prefers-color-scheme: dark){.note{background:#333}}"
        "a{color:#1a237e}"
    )
    page = browser.new_page()
    try:
        page.set_content(PAGE.format(css=css))
        results = a11y.audit_variants(page, schemes=("light", "dark"), widths=(1280,))
        assert results[("light", 1280)] == []
        assert [v["id"] for v in results[("dark", 1280)]] == ["color-contrast"]
    finally:
        page.close()


# A page of highlighted code as the site's blocks are made (Pygments' tokens in a code box),
# the tokens' colours passing on the blocks' own background: #fafafa behind #36464e and
# #3560b2. A highlighted line (hl_lines) is a span around the line's tokens.
CODE_CSS = (
    "pre>code{display:block;background:#fafafa;color:#36464e} .k{color:#3560b2}"
    " .dim{background:#fafafa} .dim pre>code{background:transparent}"
)
CODE_LINE = '<span class="n">x</span> <span class="k">in</span> y\n'


def _code_page(blocks: list[str], css: str) -> str:
    body = "".join(blocks)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title>'
        f"<style>{CODE_CSS} {css}</style></head><body><main><h1>Code</h1>{body}</main>"
        "</body></html>"
    )


def _contrast_targets(page, sampled: bool) -> set[str]:
    """The targets of the colour-contrast violations: as run_axe finds them, or by axe
    checking every element (its own configuration, nothing sampled)."""
    if sampled:
        return {t for v in a11y.run_axe(page) if v["id"] == "color-contrast" for t in v["targets"]}
    page.evaluate("() => axe.reset()")
    try:
        return set(
            page.evaluate(
                """async () => (await axe.run(document, {runOnly: {type: 'rule',
                  values: ['color-contrast']}})).violations.flatMap(
                  (v) => v.nodes.map((n) => n.target.join(' ')))"""
            )
        )
    finally:
        page.evaluate(a11y.CONFIGURE_JS, a11y.CONTRAST_SELECTOR)  # run_axe's again


@pytest.mark.parametrize(
    "where, css",
    [
        # one block among 40 has a token class of its own, too light
        ("a token class", ".bad{color:#9e9e9e}"),
        # one block's highlighted line lays a background behind tokens that pass elsewhere
        ("a line's background", ".bad{background:#5d6b73}"),
        # one block sits in a dark box and lets it through: an ancestor's look alone differs
        ("an ancestor's background", ".dim.bad{background:#4a4a4a}"),
    ],
)
def test_code_contrast_is_checked_on_every_look(browser, where, css):
    """In code blocks, colour contrast is checked on one element of each look (a11y.py's
    CODE_SAMPLES_JS): a look that fails is found wherever it stands (here in the 29th of
    40 blocks), and the looks that fail are those that fail when axe checks every
    element."""
    blocks = [f"<pre><code>{CODE_LINE}</code></pre>"] * 40
    if where == "a token class":
        blocks[28] = blocks[28].replace('class="k"', 'class="k bad"')
    elif where == "a line's background":
        blocks[28] = f'<pre><code><span class="hll bad">{CODE_LINE}</span></code></pre>'
    else:
        blocks = [f'<div class="dim">{b}</div>' for b in blocks]
        blocks[28] = blocks[28].replace('class="dim"', 'class="dim bad"')
    page = browser.new_page()
    try:
        page.set_content(_code_page(blocks, ""))
        assert _contrast_targets(page, sampled=True) == set(), "the page without the flaw"
        page.set_content(_code_page(blocks, css))
        found = _contrast_targets(page, sampled=True)
        everything = _contrast_targets(page, sampled=False)
        assert found, f"{where}: a failing look in block 29 of 40 was not found"
        assert found <= everything, (found, everything)
        looks = """(targets) => targets.map((t) => {
          const el = document.querySelector(t);
          const s = getComputedStyle(el);
          let bg = [];
          for (let a = el; a; a = a.parentElement) bg.push(getComputedStyle(a).backgroundColor);
          return s.color + ' on ' + bg.join(',');
        })"""
        assert set(page.evaluate(looks, sorted(found))) == set(
            page.evaluate(looks, sorted(everything))
        ), "the sampled audit must fail on exactly the looks that fail when all are checked"
        # text outside code blocks is not sampled: two grey notes are two violations
        notes = '<p class="note">Some words in grey.</p><p class="note">Some more.</p>'
        page.set_content(
            _code_page(blocks, css + " .note{color:#9e9e9e}").replace("</h1>", "</h1>" + notes)
        )
        found = _contrast_targets(page, sampled=True)
        assert {t for t in found if t.startswith("p:")} == {"p:nth-child(2)", "p:nth-child(3)"}
    finally:
        page.close()


def test_bad_arguments_are_named(browser):
    page = browser.new_page()
    try:
        with pytest.raises(ValueError, match="scheme"):
            a11y.set_variant(page, "sepia", 1280)
        with pytest.raises(ValueError, match="width"):
            a11y.set_variant(page, "light", 10)
        with pytest.raises(ValueError, match="tags"):
            a11y.run_axe(page, tags=[])
    finally:
        page.close()


def test_first_visit_weight_sums_every_response(browser, tmp_path):
    body = b"<!doctype html><html lang='en'><title>w</title><script src='big.js'></script></html>"
    script = ("var x = " + repr([i * i for i in range(20000)]) + ";").encode()
    (tmp_path / "index.html").write_bytes(body)
    (tmp_path / "big.js").write_bytes(script)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

    handler = functools.partial(Quiet, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        weight = a11y.first_visit_weight(browser, url)
    finally:
        server.shutdown()
        server.server_close()
    by_name = {row["url"].rsplit("/", 1)[-1]: row for row in weight["responses"]}
    assert by_name[""]["gzip"] == a11y.gzip_size(body)
    assert by_name["big.js"]["bytes"] == len(script)
    assert by_name["big.js"]["gzip"] == a11y.gzip_size(script) < len(script)
    assert weight["total"] == sum(row["gzip"] for row in weight["responses"])
    assert weight["total"] >= a11y.gzip_size(body) + a11y.gzip_size(script)


def test_header_icons_are_named_buttons(browser, site_url):
    """At 390 px the header's drawer and search icons are ``<button>``s, named, that the
    keyboard presses (overrides/main.html): a ``<label>`` may not take role="button"
    (ARIA in HTML, axe's aria-allowed-role). Enter opens the drawer; Space opens the
    search with the focus in its box. Both editions."""
    for edition, names in (("", ("Navigation", "Search")), ("zh/", ("导航栏", "搜索"))):
        page = browser.new_page(viewport={"width": 390, "height": 800})
        try:
            page.goto(f"{site_url}{edition}chapters/masks/", wait_until="load")
            a11y.settle(page)
            icons = page.evaluate(
                """() => ['__drawer', '__search'].map((id) => {
                  const el = document.querySelector(`header [for=${id}]`);
                  return [el.tagName, el.getAttribute('aria-label'), !!el.offsetParent];
                })"""
            )
            assert icons == [["BUTTON", names[0], True], ["BUTTON", names[1], True]], icons
            a11y.run_axe(page)  # injects axe
            allowed = page.evaluate(
                """async () => (await axe.run(document, {runOnly: {type: 'rule',
                  values: ['aria-allowed-role']}})).violations.map((v) => v.nodes.length)"""
            )
            assert allowed == [], f"{edition}: elements in roles they may not take: {allowed}"
            page.focus("header [for=__drawer]")
            page.keyboard.press("Enter")
            assert page.evaluate("document.getElementById('__drawer').checked")
            page.evaluate("document.getElementById('__drawer').click()")  # closed again
            page.focus("header [for=__search]")
            page.keyboard.press(" ")
            page.wait_for_function("document.getElementById('__search').checked")
            page.wait_for_function(
                "document.activeElement.getAttribute('data-md-component') === 'search-query'"
            )
        finally:
            page.close()


def test_a_labs_copy_button_keeps_its_name_after_a_click(browser, site_url):
    """A lab's copy button shows "Copied!" after a click: its name holds that text (no
    label-content-name-mismatch then), and the live region says it (site_tools/outputs/labs.py,
    figures.js). Both editions."""
    for edition, said in (("", "Copied to clipboard"), ("zh/", "已复制")):
        context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
        page = context.new_page()
        try:
            page.goto(f"{site_url}{edition}labs/scaled-dot-product-lab/", wait_until="load")
            a11y.settle(page)
            button = page.locator(".md-content clipboard-copy").first
            button.click()
            page.wait_for_function(
                "!document.querySelector('.md-content clipboard-copy .notice').hidden"
            )
            found = [v["id"] for v in a11y.run_axe(page)]
            assert found == [], f"{edition}: after a copy: {found}"
            page.wait_for_function(
                "(t) => document.querySelector('.a11y-visually-hidden[role=status]')"
                ".textContent === t",
                arg=said,
            )
        finally:
            context.close()
