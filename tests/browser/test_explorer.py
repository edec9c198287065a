"""The offline attention explorer on the real-encoder chapter, in headless Chromium.

The built page is opened from ``file://`` (the explorer must work without a server) with
every request that is not ``file:`` or ``data:`` aborted and reported, so the test also
proves the page works with the network off. Checked: hovering token i with layer l and
head h selected shows, in the DOM, exactly the weights the build embedded in the page,
and those equal the model's own output, recomputed here with ``load_minilm``; the
thumbnail grid shows every head's row for the selected token and selects a head on click;
the arrow keys move the query; no console errors; with JavaScript off the static figure
(with alt text) shows instead; at 390 px the explorer fits the screen.

Needs Playwright and a Chromium executable (see tests/browser/visit.py); skipped otherwise.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from site_tools.outputs.explorer import SCALE

PAGE = "chapters/real-encoder/index.html"
SENTENCES = {
    "fig-explorer-tired": "The animal didn't cross the street because it was too tired.",
    "fig-explorer-wide": "The animal didn't cross the street because it was too wide.",
}
# (figure, layer, head, token) the browser checks: the famous head, corners, the last token
CASES = [
    ("fig-explorer-tired", 3, 1, 10),
    ("fig-explorer-tired", 0, 0, 0),
    ("fig-explorer-tired", 5, 11, 15),
    ("fig-explorer-wide", 4, 0, 10),
    ("fig-explorer-wide", 2, 7, 3),
]

READ_TOKENS_JS = """(id) => [...document.querySelectorAll('#' + id + ' .ae-token')].map((c) => ({
  weight: Number(c.dataset.weight), text: c.querySelector('.ae-weight').textContent,
  query: c.getAttribute('aria-pressed') === 'true'}))"""
READ_THUMB_JS = """([id, l, h]) => [...document.querySelectorAll(
  '#' + id + ' .ae-thumb[data-layer="' + l + '"][data-head="' + h + '"] .ae-cell')]
  .map((c) => Number(c.style.getPropertyValue('--ae-w')))"""


@pytest.fixture(scope="module")
def page_file(built_site):
    path = built_site.dir / PAGE
    assert path.is_file(), f"{PAGE} was not built"
    return path


@pytest.fixture(scope="module")
def embedded(page_file) -> dict[str, dict]:
    """{figure id: the JSON the build embedded in the page}."""
    html = page_file.read_text(encoding="utf-8")
    found = re.findall(
        r'<figure class="attention-explorer" id="([^"]+)"[^>]*>'
        r'<script type="application/json" class="ae-data">(.*?)</script>',
        html,
        flags=re.S,
    )
    data = {fig_id: json.loads(payload.replace("<\\/", "</")) for fig_id, payload in found}
    assert set(data) == set(SENTENCES)
    return data


@pytest.fixture(scope="module")
def model_weights(embedded) -> dict[str, torch.Tensor]:
    """{figure id: (layers, H, L, L)} recomputed from the model, float64 for the comparison."""
    from attention_src.models.minilm import load_minilm

    model, tokenizer = load_minilm()
    out = {}
    for fig_id, sentence in SENTENCES.items():
        assert tokenizer.tokens(sentence) == embedded[fig_id]["tokens"]
        batch = tokenizer([sentence])
        with torch.no_grad():
            _, weights = model(batch["input_ids"], batch["attention_mask"])
        out[fig_id] = torch.stack(weights, 1)[0].double()  # (layers, H, L, L)
    return out


@pytest.fixture(scope="module")
def chromium(browser):
    """The session's Chromium (tests/browser/conftest.py)."""
    return browser


def _material_search(text: str) -> bool:
    """Material's search reads its index with a request that file:// cannot serve (its
    ``offline`` plugin would write a file:// variant); that is the theme's, not the
    explorer's, and the HTTP-served browser test covers search."""
    return "/search/search_index.js" in text


def open_offline(chromium, page_file, problems: list[str], **kwargs):
    """The page from file://, with every non-local request aborted and reported."""
    context = chromium.new_context(**kwargs)
    context.set_default_timeout(15_000)

    def route(r):
        if r.request.url.startswith(("file:", "data:")):
            r.continue_()
        else:
            problems.append(f"request to the network (aborted): {r.request.url}")
            r.abort()

    context.route("**/*", route)
    page = context.new_page()

    def on_console(msg):
        if msg.type == "error" and not _material_search(msg.location.get("url", "")):
            problems.append(f"console: {msg.text}")

    def on_error(error):
        if not _material_search(str(error)):
            problems.append(f"uncaught: {error}")

    page.on("console", on_console)
    page.on("pageerror", on_error)
    page.goto(page_file.as_uri())
    page.wait_for_load_state("load")
    return context, page


def test_embedded_weights_are_the_models(embedded, model_weights):
    for fig_id, data in embedded.items():
        shown = torch.tensor(data["weights"], dtype=torch.float64) / data["scale"]
        assert data["scale"] == SCALE
        assert shown.shape == model_weights[fig_id].shape == (6, 12, len(data["tokens"]), 16)
        assert (shown - model_weights[fig_id]).abs().max() <= 0.5 / SCALE + 1e-7


def test_hovering_a_token_shows_the_weights_of_the_selected_head(
    chromium, page_file, embedded, model_weights
):
    problems: list[str] = []
    context, page = open_offline(
        chromium, page_file, problems, viewport={"width": 1280, "height": 900}
    )
    try:
        for fig_id, layer, head, token in CASES:
            fig = page.locator(f"#{fig_id}")
            fig.locator("select[data-ae='layer']").select_option(str(layer))
            fig.locator("select[data-ae='head']").select_option(str(head))
            fig.locator(".ae-token").nth(token).scroll_into_view_if_needed()
            fig.locator(".ae-token").nth(token).hover()
            chips = page.evaluate(READ_TOKENS_JS, fig_id)
            built = [w / SCALE for w in embedded[fig_id]["weights"][layer][head][token]]
            model = model_weights[fig_id][layer, head, token].tolist()
            assert [c["query"] for c in chips] == [j == token for j in range(len(chips))]
            for j, chip in enumerate(chips):
                assert chip["weight"] == pytest.approx(built[j], abs=1e-12), (fig_id, j)
                assert abs(chip["weight"] - model[j]) <= 0.5 / SCALE + 1e-7
                assert chip["text"] == f"{built[j]:.3f}"
            # the grid shows the same row in the thumbnail of every head
            for l2, h2 in ((layer, head), (5 - layer, 11 - head)):
                cells = page.evaluate(READ_THUMB_JS, [fig_id, l2, h2])
                want = [w / SCALE for w in embedded[fig_id]["weights"][l2][h2][token]]
                assert cells == pytest.approx(want, abs=1e-12)
            summary = fig.locator(".ae-summary").inner_text()
            top = max(range(len(built)), key=lambda j: built[j])
            assert f"Layer {layer}, head {head}:" in summary
            assert embedded[fig_id]["tokens"][top] in summary
    finally:
        context.close()
    assert problems == []


def test_thumbnails_and_keys_select(chromium, page_file, embedded):
    problems: list[str] = []
    context, page = open_offline(
        chromium, page_file, problems, viewport={"width": 1280, "height": 900}
    )
    try:
        fig_id = "fig-explorer-tired"
        fig = page.locator(f"#{fig_id}")
        fig.locator('.ae-thumb[data-layer="4"][data-head="7"]').click()
        assert fig.locator("select[data-ae='layer']").input_value() == "4"
        assert fig.locator("select[data-ae='head']").input_value() == "7"
        assert fig.locator(".ae-thumb.ae-selected").count() == 1
        start = embedded[fig_id]["start"]["token"]
        fig.locator(".ae-token").nth(start).focus()
        page.keyboard.press("ArrowRight")
        chips = page.evaluate(READ_TOKENS_JS, fig_id)
        assert [j for j, c in enumerate(chips) if c["query"]] == [start + 1]
        want = [w / SCALE for w in embedded[fig_id]["weights"][4][7][start + 1]]
        assert [c["weight"] for c in chips] == pytest.approx(want, abs=1e-12)
        assert fig.locator(".ae-fallback").is_hidden()
    finally:
        context.close()
    assert problems == []


def test_without_javascript_the_static_figure_shows(chromium, page_file):
    problems: list[str] = []
    context, page = open_offline(chromium, page_file, problems, java_script_enabled=False)
    try:
        for fig_id in SENTENCES:
            img = page.locator(f"#{fig_id} .ae-fallback img")
            assert img.is_visible()
            assert "72 heads" in img.get_attribute("alt")
            assert page.locator(f"#{fig_id} .ae-root").count() == 0
    finally:
        context.close()
    assert problems == []


def test_fits_a_phone(chromium, page_file):
    problems: list[str] = []
    context, page = open_offline(
        chromium, page_file, problems, viewport={"width": 390, "height": 844}
    )
    try:
        for fig_id in SENTENCES:
            widths = page.evaluate(
                "(id) => { const r = document.querySelector('#' + id + ' .ae-root');"
                " return [r.scrollWidth, r.clientWidth]; }",
                fig_id,
            )
            assert widths[0] <= widths[1], f"{fig_id} overflows at 390 px: {widths}"
    finally:
        context.close()
    assert problems == []
