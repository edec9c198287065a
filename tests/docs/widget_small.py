"""The small trained models in the reader's browser equal PyTorch (issue 37).

Chapter 12's causal copy model and chapter 14's encoder–decoder run in their pages
(docs/assets/javascripts/attention-live-small.js, on weights site_tools/live_small.py
exports at build time). Each widget is exercised inside its page's one visit of the browser
pass (tests/docs/test_browser.py's ``page_reports``; tests/docs/widgets.py finds it and calls
:func:`drive`), before that visit's accessibility audit, so the audit (light and dark, 1280
and 390 px) sees the page with the reader's result on it. In the English pages:

- before the reader asks, nothing of the model is fetched; the widget's button names
  its size, and the model files are at most 200 KB;
- bad input gets a clear message: an empty box, symbols outside the task's alphabet,
  too many symbols (the lesson's own ``ValueError`` message), and a weights file that
  fails to load (simulated: the request answers 404), after which a second press loads;
- more than twenty inputs, the page's own examples among them (and, for chapter 14,
  sources longer than the training lengths), in one ``page.evaluate``: every attention
  weight within 1e-4 of the page's PyTorch model (the lesson modules on the original
  float32 weights from the build's results cache), every predicted symbol identical;
- screenshots of the widget before and after an input, light, dark and at 390 px, in
  test-artifacts/.

In the Chinese pages: the widget's words in Chinese, nothing fetched before the reader asks,
the empty box's message, then the page's example written as PyTorch writes it.

The time per answer is printed (the budget is 100 ms), not asserted. test_live_small.py
keeps the checks of the export that need no browser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from site_tools import live_small

from . import a11y
from .conftest import ARTIFACTS

TOLERANCE = 1e-4
PAGES = {
    "causal-copy": "chapters/causal-attention/",
    "encoder-decoder-copy": "chapters/encoder-decoder/",
}
MAX_BYTES = 200 * 1000
TIMEOUT_MS = 30_000

# ---- PyTorch: the page's own trained model -----------------------------------------


_MODELS: dict = {}


def reference_model(name: str):
    """The page's model as the build trained it: its program run up to the training,
    which the results cache answers (site_tools.live_small.trained_model)."""
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
          button: root.querySelector('button[type="submit"]').textContent};
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
        out["shown"] = submit(" ".join(map(str, examples[-1])))
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
    out["outside"] = submit(out["outside_text"])
    out["refused"] = submit(" ".join(str(symbols[1]) for _ in range(max_len + 1)))

    # a reader's input: a result, announced (the visit's audit sees the page with it)
    out["shown"] = submit(" ".join(map(str, examples[-1])))
    out["polite"] = root.locator('[aria-live="polite"]').text_content()
    out["canvases"] = root.locator("canvas").count()
    out["shots"] += [str(s) for s in _screenshots(page, root, name, "after", ARTIFACTS)]

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
    assert f"{size / 1000:.1f} KB" in run["button"], f"the button does not name the size: {run}"
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
    assert f"{run['size'] / 1000:.1f} KB" in run["button"] and "加载" in run["button"], run
    assert run["fetched_before"] == [], run["fetched_before"]
    empty = run["empty"]
    assert empty["state"] == "error" and "请先输入" in empty["error"], empty
    shown = run["shown"]
    assert shown["state"] == "done" and shown["error"] == "", shown
    model = reference_model(name)
    ids = run["examples"][-1]
    want = (causal_reference if name == "causal-copy" else seq2seq_reference)(model, ids)
    assert run["written"] == want["written"], (ids, run["written"], want["written"])


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
