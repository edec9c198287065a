"""The small trained models in the reader's browser equal PyTorch (issue 37).

Chapter 12's causal copy model and chapter 14's encoder–decoder run in their pages
(docs/assets/javascripts/attention-live-small.js, on weights site_tools/outputs/live_small.py
exports at build time). Each widget is exercised inside its page's one visit of the browser
pass (tests/browser/visit.py, ``page_reports``; tests/browser/widgets.py finds it and calls
:func:`drive`), before that visit's accessibility audit, so the audit (light and dark, 1280
and 390 px) sees the page with the reader's result on it. In the English pages:

- before the reader asks, nothing of the model is fetched; the widget's button names
  its size, and the model files are at most 200 kB; the progress label counts the same
  bytes in the same unit (kB = 1000 bytes), so that its last figure is the button's;
- bad input gets a clear message: an empty box, symbols outside the task's alphabet,
  too many symbols (the lesson's own ``ValueError`` message), and a weights file that
  fails to load (simulated: the request answers 404), after which a second press loads;
- more than twenty inputs, the page's own examples among them (and, for chapter 14,
  sources longer than the training lengths), in one ``page.evaluate``: every attention
  weight within 1e-4 of the page's PyTorch model (the lesson modules on the original
  float32 weights from the build's results cache), every predicted symbol identical;
- screenshots of the widget before and after an input, light, dark and at 390 px, in
  test-artifacts/;
- what a reader meets: Run pressed with the keyboard leaves the focus on the button, also
  while the model loads;
  the weight under the pointer (and under the keyboard's cell) is said right under its
  map, in a live region; at 390 px the longest input's tables (the symbols written,
  chapter 14's ✗ marks) lie inside the screen, cut into bands, and at 1280 px in one.

In the Chinese pages: the widget's words in Chinese, nothing fetched before the reader asks,
the empty box's message, then the page's example (Run pressed with the keyboard, the focus
kept) written as PyTorch writes it, and the progress label's kB equal to the button's.

The time per answer is printed (the budget is 100 ms), not asserted. test_live_small.py
keeps the checks of the export that need no browser.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from site_tools.outputs import live_small
from tests.site.build import ARTIFACTS

from . import a11y

TOLERANCE = 1e-4
PAGES = {
    "causal-copy": "chapters/causal-attention/",
    "encoder-decoder-copy": "chapters/encoder-decoder/",
}
MAX_BYTES = 200 * 1000
TIMEOUT_MS = 30_000
NEAR_PX = 40  # a map's readout starts at most this far below the map

# ---- PyTorch: the page's own trained model -----------------------------------------


_MODELS: dict = {}


def reference_model(name: str):
    """The page's model as the build trained it: its program run up to the training,
    which the results cache answers (site_tools.outputs.live_small.trained_model)."""
    if name not in _MODELS:
        _MODELS[name] = live_small.trained_model(live_small.BY_NAME[name]).cpu().eval()
    return _MODELS[name]


def random_inputs(symbols: list[int], lengths: list[int], seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    table = torch.tensor(symbols)
    return [table[torch.randint(len(symbols), (n,), generator=g)].tolist() for n in lengths]


@torch.no_grad()
def causal_reference(model, ids: list[int]) -> dict:
    tokens = torch.tensor([ids])
    logits, maps = model(tokens)
    written = model.generate(tokens, max_new_tokens=model.max_len - len(ids))
    return {
        "predictions": logits[0].argmax(dim=-1).tolist(),
        "written": written[0].tolist(),
        "weights": [w[0] for w in maps],  # (H, L, L) per layer
    }


@torch.no_grad()
def seq2seq_reference(model, ids: list[int]) -> dict:
    """``generate`` and the weights of its last step: the encoder's, the decoder's
    masked self-attention and the cross-attention, per layer."""
    from attention_src.masks import causal_mask
    from attention_src.seq2seq import BOS

    source = torch.tensor([ids])
    written, cross = model.generate(source)
    memory, encoder_maps = model.encoder(source)
    decoder_input = torch.cat([torch.full((1, 1), BOS), written[:, :-1]], dim=1)  # (1, S)
    y = model.target_embedding(decoder_input) * model.d_model**0.5
    y = model.positional(y)
    self_maps, cross_maps = [], []
    for layer in model.layers:
        y, self_w, cross_w = layer(y, memory, causal_mask(y.size(1)), None)
        self_maps.append(self_w[0])
        cross_maps.append(cross_w[0])
    for ours, generated in zip(cross_maps, cross, strict=True):  # the same as generate's
        torch.testing.assert_close(ours, generated[0])
    return {
        "written": written[0].tolist(),
        "encoder": [w[0] for w in encoder_maps],
        "self": self_maps,
        "cross": cross_maps,
    }


def largest_gap(page_maps, torch_maps) -> float:
    gap = 0.0
    for got, want in zip(page_maps, torch_maps, strict=True):
        got = torch.tensor(got, dtype=torch.float64).view(want.shape)
        gap = max(gap, (got - want.double()).abs().max().item())
    return gap


# ---- the browser ---------------------------------------------------------------------

# Every input through the page's own forward passes, in one evaluate.
RUN_ALL_JS = """async ({name, inputs}) => {
  const small = window.AttentionLive.small;
  const root = document.querySelector(`[data-live-small="${name}"]`);
  const model = root.liveModel;
  const flat = (ts) => ts.map((t) => Array.from(t.data));
  const out = [];
  for (const ids of inputs) {
    const start = performance.now();
    if (model.manifest.kind === "causal-lm") {
      const r = small.causalLM(model, ids);
      const written = small.generate(model, ids, model.config.max_len - ids.length);
      out.push({predictions: r.predictions, written, weights: flat(r.weights),
                ms: performance.now() - start});
    } else {
      const r = small.encoderDecoder(model, ids);
      out.push({written: r.written, encoder: flat(r.encoderWeights), self: flat(r.selfWeights),
                cross: flat(r.crossWeights), ms: performance.now() - start});
    }
  }
  return out;
}"""

SUBMIT_JS = """async ({name, text}) => {
  const root = document.querySelector(`[data-live-small="${name}"]`);
  const box = root.querySelector('input[type="text"]');
  box.value = text;
  root.dataset.liveState = "";
  root.querySelector('form').requestSubmit();
  const end = Date.now() + 20000;
  while (!["done", "error"].includes(root.dataset.liveState) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
  }
  return {state: root.dataset.liveState || "",
          error: root.querySelector('.live-error').textContent,
          status: root.querySelector('.live-status').textContent,
          button: root.querySelector('button[type="submit"]').textContent,
          progress: root.querySelector('progress').getAttribute('aria-label')};
}"""

# The box's text, then Run pressed with the keyboard (focus on the button, Enter), as a
# keyboard reader does; returns what SUBMIT_JS returns and where the focus is after it.
TYPE_JS = """({name, text}) => {
  const root = document.querySelector(`[data-live-small="${name}"]`);
  root.querySelector('input[type="text"]').value = text;
  root.dataset.liveState = "";
}"""
AFTER_KEYBOARD_JS = """async (name) => {
  const root = document.querySelector(`[data-live-small="${name}"]`);
  const end = Date.now() + 20000;
  while (!["done", "error"].includes(root.dataset.liveState) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const button = root.querySelector('button[type="submit"]');
  const focus = document.activeElement;
  return {state: root.dataset.liveState || "",
          error: root.querySelector('.live-error').textContent,
          status: root.querySelector('.live-status').textContent,
          progress: root.querySelector('progress').getAttribute('aria-label'),
          focusOnButton: focus === button,
          focus: focus ? focus.tagName + (focus.className ? '.' + focus.className : '') : null};
}"""

# The readouts after the pointer (or the keyboard) chose a cell of map `at`: each readout's
# words, live region and place, with that map's.
READOUTS_JS = """({name, at}) => {
  const root = document.querySelector(`[data-live-small="${name}"]`);
  const box = (e) => { const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  return {
    map: box(root.querySelectorAll('canvas')[at]),
    readouts: [...root.querySelectorAll('.ls-readout')].map((r) => ({
      text: r.textContent, live: r.getAttribute('aria-live'), box: box(r)})),
  };
}"""

# Where every cell of the result's tables lies, against the screen's width.
TABLES_JS = """(name) => {
  const root = document.querySelector(`[data-live-small="${name}"]`);
  const tables = [...root.querySelectorAll('.ls-table')];
  return {
    width: document.documentElement.clientWidth,
    bands: tables.map((t) => t.querySelectorAll('tbody').length),
    scroll: tables.map((t) => [t.scrollWidth, t.clientWidth]),
    cells: tables.flatMap((t) => [...t.querySelectorAll('th, td')].map((c) => ({
      text: c.textContent, right: c.getBoundingClientRect().right,
      wrong: c.classList.contains('ls-wrong')}))),
  };
}"""


# Material's header is fixed: it would cover the top of a tall widget's screenshot
HIDE_HEADER_JS = """(hide) => {
  const old = document.getElementById('live-shot-style');
  if (old) old.remove();
  if (hide) {
    const style = Object.assign(document.createElement('style'), {id: 'live-shot-style'});
    style.textContent = '.md-header, .md-tabs { visibility: hidden !important; }';
    document.head.append(style);
  }
}"""


def _screenshots(page, root, name: str, when: str, artifacts_dir: Path) -> list[Path]:
    """The widget alone, light and dark at 1280 px and light at 390 px."""
    shots = []
    page.evaluate(HIDE_HEADER_JS, True)
    for scheme, width in (("light", 1280), ("dark", 1280), ("light", 390)):
        a11y.set_variant(page, scheme, width)
        root.scroll_into_view_if_needed()
        path = artifacts_dir / f"live-{name}-{when}-{scheme}-{width}.png"
        root.screenshot(path=str(path))
        shots.append(path)
    a11y.set_variant(page, "light", 1280)
    page.evaluate(HIDE_HEADER_JS, False)
    return shots


def drive(page, name: str, zh: bool, deliberate: set[str]) -> dict:
    """Model ``name``'s widget, the reader's way, in the page's visit; every URL this makes
    fail on purpose goes into ``deliberate`` (the visit does not report it as a problem)."""
    fetched: list[str] = []

    def on_request(request):
        if "/assets/live/small/" in request.url:
            fetched.append(request.url)

    page.on("request", on_request)
    try:
        return _drive(page, name, zh, deliberate, fetched)
    finally:
        page.remove_listener("request", on_request)


def _drive(page, name: str, zh: bool, deliberate: set[str], fetched: list[str]) -> dict:
    root = page.locator(f'[data-live-small="{name}"]')
    page.wait_for_function(
        f"""() => document.querySelector('[data-live-small="{name}"] form') !== null"""
    )
    submit = lambda text: page.evaluate(SUBMIT_JS, {"name": name, "text": text})  # noqa: E731

    def keyboard(text):  # Run pressed with the keyboard
        page.evaluate(TYPE_JS, {"name": name, "text": text})
        root.locator('button[type="submit"]').focus()
        page.keyboard.press("Enter")
        return page.evaluate(AFTER_KEYBOARD_JS, name)

    out: dict = {
        "size": int(root.get_attribute("data-bytes")),
        "examples": json.loads(root.get_attribute("data-examples")),
        "button": root.locator('button[type="submit"]').text_content(),
        "label": root.locator("label").first.text_content(),
    }
    examples = out["examples"]
    if zh:
        out["empty"] = submit("")
        out["fetched_before"] = list(fetched)
        out["shown"] = keyboard(" ".join(map(str, examples[-1])))  # the model loads here
        out["written"] = page.evaluate(WRITTEN_JS, name)
        return out
    out["shots"] = [str(s) for s in _screenshots(page, root, name, "before", ARTIFACTS)]
    out["fetched_before"] = list(fetched)
    # bad input, each with its message; an empty box fetches nothing
    out["empty"] = submit("   ")
    out["fetched_after_empty"] = list(fetched)

    # a weights file that fails to load: the message, then a second press loads
    def missing(route):
        deliberate.add(route.request.url)
        route.fulfill(status=404)

    page.route("**/assets/live/small/*.bin", missing)
    out["failed"] = submit(" ".join(map(str, examples[0])))
    page.unroute("**/assets/live/small/*.bin")

    model = reference_model(name)
    config = model_config(model, name)
    symbols, max_len = config["symbols"], config["max_len"]
    out["outside_text"] = "3 1 x 99" if name == "causal-copy" else "3 0 12 x"
    # the model loads here: Run pressed with the keyboard, which the load must not lose
    out["outside"] = keyboard(out["outside_text"])
    out["refused"] = submit(" ".join(str(symbols[1]) for _ in range(max_len + 1)))

    # a reader's input, Run pressed with the keyboard: a result, announced
    out["shown"] = keyboard(" ".join(map(str, examples[-1])))
    out["polite"] = root.locator(".live-status").text_content()
    out["canvases"] = root.locator("canvas").count()
    # the weight under the pointer, on the first map; then the keyboard's, on the last
    canvas = root.locator("canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.1, box["y"] + box["height"] * 0.95)
    out["hovered"] = page.evaluate(READOUTS_JS, {"name": name, "at": 0})
    last = out["canvases"] - 1
    root.locator("canvas").nth(last).focus()
    page.keyboard.press("ArrowDown")
    out["keyed"] = page.evaluate(READOUTS_JS, {"name": name, "at": last})
    page.mouse.move(0, 0)
    out["shots"] += [str(s) for s in _screenshots(page, root, name, "after", ARTIFACTS)]
    # the longest input the model takes: its tables inside a phone's screen, and in one band
    # at 1280 px (the visit's audit then sees this result)
    out["longest"] = submit(" ".join(map(str, random_inputs(symbols, [max_len], seed=39)[0])))
    out["tables_1280"] = page.evaluate(TABLES_JS, name)
    a11y.set_variant(page, "light", 390)
    page.wait_for_timeout(100)  # the widget re-cuts its tables in the next frame
    out["tables_390"] = page.evaluate(TABLES_JS, name)
    a11y.set_variant(page, "light", 1280)

    # many inputs through the page's own forward passes, in one evaluate
    if name == "causal-copy":
        lengths = [1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 13, 14, 15, 15, 16, 16, 16]
    else:
        lengths = [1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 17, 18, 20, 22, 24, 26, 28, 30, 32]
    out["inputs"] = examples + random_inputs(symbols, lengths, seed=37)
    out["got"] = page.evaluate(RUN_ALL_JS, {"name": name, "inputs": out["inputs"]})
    out["sizes"] = {
        u.rsplit("/", 1)[-1]: len(page.request.get(u).body()) for u in sorted(set(fetched))
    }
    return out


# What the widget wrote for the reader's input (the sequence it shows).
WRITTEN_JS = """(name) => {
  const root = document.querySelector(`[data-live-small="${name}"]`);
  return root.liveResult ? (root.liveResult.written || null) : null;
}"""


# ---- the checks, on what the visit returned ------------------------------------------------


def check_english(name: str, run: dict) -> dict:
    """Every check of the module docstring for model ``name``'s English page; returns the
    figures measured (sizes, largest differences, milliseconds per answer)."""
    model = reference_model(name)
    config = model_config(model, name)
    symbols, max_len = config["symbols"], config["max_len"]
    size = run["size"]
    _same_kilobytes(run["size"], run["button"], run["outside"]["progress"])
    limit = f"at most {max_len}"
    assert limit in run["label"], f"the box's label does not say {limit!r}: {run['label']!r}"
    assert run["fetched_before"] == [], f"fetched before the reader asked: {run['fetched_before']}"
    empty = run["empty"]
    assert empty["state"] == "error" and "Type a sequence" in empty["error"], empty
    assert run["fetched_after_empty"] == [], "an empty box fetched the model"
    failed = run["failed"]
    assert failed["state"] == "error", failed
    assert "failed to load" in failed["error"] and "404" in failed["error"], failed
    bad = run["outside"]
    assert bad["state"] == "error" and "Not symbols of this task" in bad["error"], bad
    for word in run["outside_text"].split()[1:]:
        if not word.isdigit() or int(word) not in symbols:
            assert word in bad["error"], f"{word!r} not named: {bad['error']!r}"
    refused = run["refused"]
    assert refused["state"] == "error", refused
    lesson = lesson_message(model, name, max_len + 1)
    assert lesson in refused["error"], f"not the lesson's message {lesson!r}: {refused}"
    shown = run["shown"]
    assert shown["state"] == "done" and shown["error"] == "", shown
    assert " ms" in shown["status"], shown
    assert run["polite"] == shown["status"]
    assert run["canvases"] > 0
    _reader_checks(run)
    inputs, got = run["inputs"], run["got"]
    assert len(inputs) >= 20
    assert sum(run["sizes"].values()) == size, f"data-bytes {size} is not what was fetched: {run}"
    assert size <= MAX_BYTES, f"{name}: {size} bytes, over the 200 KB budget"
    gap = 0.0
    for ids, page_result in zip(inputs, got, strict=True):
        if name == "causal-copy":
            want = causal_reference(model, ids)
            assert page_result["predictions"] == want["predictions"], ids
            pairs = [(page_result["weights"], want["weights"])]
        else:
            want = seq2seq_reference(model, ids)
            pairs = [(page_result[k], want[k]) for k in ("encoder", "self", "cross")]
        assert page_result["written"] == want["written"], ids
        for page_maps, torch_maps in pairs:
            gap = max(gap, largest_gap(page_maps, torch_maps))
    assert gap <= TOLERANCE, f"{name}: attention weights differ by up to {gap:.2e}"
    ms = sorted(r["ms"] for r in got)
    return {
        "bytes": size,
        "files": run["sizes"],
        "inputs": len(inputs),
        "max_abs_diff": gap,
        "ms_median": ms[len(ms) // 2],
        "ms_max": ms[-1],
        "screenshots": run["shots"],
    }


def check_chinese(name: str, run: dict) -> None:
    """The Chinese page's widget: its words in Chinese, its size named, nothing fetched
    before the reader asks, then the page's example written as PyTorch writes it."""
    assert run["label"].startswith("你的"), run
    assert "加载" in run["button"], run
    _same_kilobytes(run["size"], run["button"], run["shown"]["progress"])
    assert run["fetched_before"] == [], run["fetched_before"]
    empty = run["empty"]
    assert empty["state"] == "error" and "请先输入" in empty["error"], empty
    shown = run["shown"]
    assert shown["state"] == "done" and shown["error"] == "", shown
    assert shown["focusOnButton"], f"Run pressed with the keyboard lost the focus: {shown}"
    model = reference_model(name)
    ids = run["examples"][-1]
    want = (causal_reference if name == "causal-copy" else seq2seq_reference)(model, ids)
    assert run["written"] == want["written"], (ids, run["written"], want["written"])


def _same_kilobytes(size: int, button: str, label: str | None) -> None:
    """The button and the progress label name the same bytes in one unit: kB, 1000 bytes.
    ``label``: the progress label after the first load that succeeded, "<got> kB of <total>
    kB" (or "/"): both figures are the button's."""
    figure = f"{size / 1000:.1f} kB"
    assert figure in button, f"the button does not name {figure}: {button!r}"
    label = label or ""
    shown = re.findall(r"(\d+(?:\.\d+)?) ?([kKM]i?B)", label)
    assert shown and all(f"{n} {unit}" == figure for n, unit in shown), (
        f"the progress label {label!r} does not end at the button's {figure}"
    )


def _reader_checks(run: dict) -> None:
    """The keyboard's focus, the readouts by their maps, the tables on a phone."""
    for press in (run["outside"], run["shown"]):  # loading the model, then computing
        assert press["focusOnButton"], f"Run pressed with the keyboard lost the focus: {press}"
    for how, got in (("the pointer", run["hovered"]), ("the keyboard", run["keyed"])):
        said = [r for r in got["readouts"] if r["text"]]
        assert len(said) == 1, f"{how}: {len(said)} readouts say a weight: {got['readouts']}"
        readout, canvas = said[0], got["map"]
        assert readout["live"] == "polite", f"{how}: the readout is not announced: {readout}"
        below = readout["box"]["top"] - canvas["bottom"]
        beside = min(readout["box"]["right"], canvas["right"]) - max(
            readout["box"]["left"], canvas["left"]
        )
        assert 0 <= below <= NEAR_PX and beside > 0, (
            f"{how}: the readout is {below:.0f} px below the map it reads ({readout}, {canvas})"
        )
        assert re.search(r"\d\.\d{3}$", readout["text"]), readout
    longest = run["longest"]
    assert longest["state"] == "done", longest
    for width, tables in (("1280", run["tables_1280"]), ("390", run["tables_390"])):
        outside = [c for c in tables["cells"] if c["right"] > tables["width"] + 0.5]
        assert outside == [], f"at {width} px, cells lie off the screen: {outside[:5]}"
        assert all(s <= c for s, c in tables["scroll"]), f"a table scrolls at {width} px: {tables}"
    # cut where the width asks for it, not more: fewer bands on the wide screen
    wide, narrow = sum(run["tables_1280"]["bands"]), sum(run["tables_390"]["bands"])
    assert wide < narrow, f"{wide} bands at 1280 px, {narrow} at 390 px"


def model_config(model, name: str) -> dict:
    return live_small._config(live_small.BY_NAME[name].kind, model)


def lesson_message(model, name: str, length: int) -> str:
    """What the lesson module says for a too-long input: its ValueError's message."""
    tokens = torch.ones(1, length, dtype=torch.long)
    with pytest.raises(ValueError) as error:
        if name == "causal-copy":
            model(tokens)
        else:
            model.generate(tokens)
    return str(error.value)
