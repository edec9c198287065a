"""The small trained models in the reader's browser equal PyTorch (issue 37).

Chapter 12's causal copy model and chapter 14's encoder–decoder run in their pages
(docs/assets/javascripts/attention-live-small.js, on weights site_tools/live_small.py
exports at build time). One page load per model, in headless Chromium:

- before the reader asks, nothing of the model is fetched; the widget's button names
  its size, and the model files are at most 200 KB;
- bad input gets a clear message: an empty box, symbols outside the task's alphabet,
  too many symbols (the lesson's own ``ValueError`` message), and a weights file that
  fails to load (simulated: the request answers 404), after which a second press loads;
- more than twenty inputs, the page's own examples among them (and, for chapter 14,
  sources longer than the training lengths), in one ``page.evaluate``: every attention
  weight within 1e-4 of the page's PyTorch model (the lesson modules on the original
  float32 weights from the build's results cache), every predicted symbol identical;
- the accessibility audit after a result; screenshots of the widget before and after
  an input, light, dark and at 390 px, in test-artifacts/.

The time per answer is printed (the budget is 100 ms), not asserted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from site_tools import live_small

from . import a11y

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


def _context(browser, site_url: str, problems: list[str]):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    origin = re.escape(site_url).replace("/", r"\/")
    context.route(re.compile(rf"^(?!{origin}|data:|blob:)"), lambda route: route.abort())
    context.on("weberror", lambda error: problems.append(f"uncaught exception: {error.error}"))
    return context


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


def check_model(browser, site_url: str, artifacts_dir: Path, name: str) -> dict:
    """One page load: every check of the module docstring for model ``name``. Returns
    the figures measured (sizes, largest differences, milliseconds per answer)."""
    model = reference_model(name)
    problems: list[str] = []
    model_requests: list[str] = []
    context = _context(browser, site_url, problems)
    try:
        page = context.new_page()
        page.on(
            "request",
            lambda r: model_requests.append(r.url) if "/assets/live/small/" in r.url else None,
        )
        page.goto(site_url + PAGES[name])
        root = page.locator(f'[data-live-small="{name}"]')
        page.wait_for_function(
            f"""() => document.querySelector('[data-live-small="{name}"] form') !== null"""
        )
        size = int(root.get_attribute("data-bytes"))
        examples = json.loads(root.get_attribute("data-examples"))
        button = root.locator('button[type="submit"]').text_content()
        assert f"{size / 1000:.1f} KB" in button, f"the button does not name the size: {button!r}"
        label = root.locator("label").first.text_content()
        limit = f"at most {model_config(model, name)['max_len']}"
        assert limit in label, f"the box's label does not say {limit!r}: {label!r}"
        shots = _screenshots(page, root, name, "before", artifacts_dir)
        assert model_requests == [], f"fetched before the reader asked: {model_requests}"

        # bad input, each with its message; an empty box fetches nothing
        empty = page.evaluate(SUBMIT_JS, {"name": name, "text": "   "})
        assert empty["state"] == "error" and "Type a sequence" in empty["error"], empty
        assert model_requests == [], f"an empty box fetched the model: {model_requests}"

        # a weights file that fails to load: the message, then a second press loads
        page.route("**/assets/live/small/*.bin", lambda route: route.fulfill(status=404))
        failed = page.evaluate(SUBMIT_JS, {"name": name, "text": " ".join(map(str, examples[0]))})
        assert failed["state"] == "error", failed
        assert "failed to load" in failed["error"] and "404" in failed["error"], failed
        page.unroute("**/assets/live/small/*.bin")

        config = model_config(model, name)
        symbols, max_len = config["symbols"], config["max_len"]
        outside = "3 1 x 99" if name == "causal-copy" else "3 0 12 x"
        bad = page.evaluate(SUBMIT_JS, {"name": name, "text": outside})
        assert bad["state"] == "error" and "Not symbols of this task" in bad["error"], bad
        for word in outside.split()[1:]:
            if not word.isdigit() or int(word) not in symbols:
                assert word in bad["error"], f"{word!r} not named: {bad['error']!r}"
        too_long = " ".join(str(symbols[1]) for _ in range(max_len + 1))
        refused = page.evaluate(SUBMIT_JS, {"name": name, "text": too_long})
        assert refused["state"] == "error", refused
        lesson = lesson_message(model, name, max_len + 1)
        assert lesson in refused["error"], f"not the lesson's message {lesson!r}: {refused}"

        # a reader's input: a result, announced, and the audit passes
        shown = page.evaluate(SUBMIT_JS, {"name": name, "text": " ".join(map(str, examples[-1]))})
        assert shown["state"] == "done" and shown["error"] == "", shown
        assert " ms" in shown["status"], shown
        assert root.locator('[aria-live="polite"]').text_content() == shown["status"]
        assert root.locator("canvas").count() > 0
        found = a11y.audit_variants(page)  # light and dark, 1280 and 390 px
        violations = {f"{k[0]} {k[1]}px": v for k, v in found.items() if v}
        assert violations == {}, f"accessibility violations after a result: {violations}"
        shots += _screenshots(page, root, name, "after", artifacts_dir)

        # equality with PyTorch on many inputs, in one evaluate
        if name == "causal-copy":
            lengths = [1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 13, 14, 15, 15, 16, 16, 16]
        else:
            lengths = [1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 17, 18, 20, 22, 24, 26, 28, 30, 32]
        inputs = examples + random_inputs(symbols, lengths, seed=37)
        got = page.evaluate(RUN_ALL_JS, {"name": name, "inputs": inputs})
        sizes = {
            u.rsplit("/", 1)[-1]: len(page.request.get(u).body())
            for u in sorted(set(model_requests))
        }
    finally:
        context.close()
    assert problems == [], problems
    assert len(inputs) >= 20
    assert sum(sizes.values()) == size, f"data-bytes {size} is not what was fetched: {sizes}"
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
        "files": sizes,
        "inputs": len(inputs),
        "max_abs_diff": gap,
        "ms_median": ms[len(ms) // 2],
        "ms_max": ms[-1],
        "screenshots": [str(s) for s in shots],
    }


def check_chinese_widget(browser, site_url: str, name: str) -> dict:
    """The Chinese page's widget: its words in Chinese, its size named, nothing fetched."""
    problems: list[str] = []
    fetched: list[str] = []
    context = _context(browser, site_url, problems)
    try:
        page = context.new_page()
        page.on("request", lambda r: fetched.append(r.url) if "/live/small/" in r.url else None)
        page.goto(site_url + "zh/" + PAGES[name])
        root = page.locator(f'[data-live-small="{name}"]')
        page.wait_for_function(
            f"""() => document.querySelector('[data-live-small="{name}"] form') !== null"""
        )
        words = {
            "label": root.locator("label").first.text_content(),
            "button": root.locator('button[type="submit"]').text_content(),
            "size": int(root.get_attribute("data-bytes")),
        }
        empty = page.evaluate(SUBMIT_JS, {"name": name, "text": ""})
    finally:
        context.close()
    assert problems == [] and fetched == [], (problems, fetched)
    assert words["label"].startswith("你的"), words
    assert f"{words['size'] / 1000:.1f} KB" in words["button"] and "加载" in words["button"], words
    assert empty["state"] == "error" and "请先输入" in empty["error"], empty
    return words


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


# ---- the tests ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAGES))
def test_small_model_in_the_page_equals_pytorch(browser, site_url, artifacts_dir, name):
    measured = check_model(browser, site_url, artifacts_dir, name)
    print(f"{name}: {json.dumps(measured, indent=1)}")


@pytest.mark.parametrize("name", sorted(PAGES))
def test_chinese_page_has_the_widget_in_chinese(browser, site_url, name):
    check_chinese_widget(browser, site_url, name)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_exported_weights_are_the_trained_ones(built_site, name):
    """The .bin holds the trained float32 weights bit for bit, named as the state_dict."""
    folder = Path(built_site.dir) / live_small.OUT_DIR
    manifest = json.loads((folder / f"{name}.json").read_text("utf-8"))
    data = (folder / manifest["weights"]).read_bytes()
    assert len(data) == manifest["weights_bytes"]
    flat = torch.frombuffer(bytearray(data), dtype=torch.float32)
    state = reference_model(name).state_dict()
    assert set(manifest["tensors"]) == set(state)
    for key, value in state.items():
        entry = manifest["tensors"][key]
        entry = manifest["tensors"].get(entry.get("same_as"), entry)
        n = value.numel()
        stored = flat[entry["offset"] : entry["offset"] + n].view(entry["shape"])
        assert torch.equal(stored, value.float()), key
    zh = Path(built_site.dir) / "zh" / live_small.OUT_DIR / f"{name}.json"
    assert zh.read_bytes() == (folder / f"{name}.json").read_bytes()


def _unpack(manifest: dict, data: bytes) -> dict:
    flat = torch.frombuffer(bytearray(data), dtype=torch.float32)
    out = {}
    for key, entry in manifest["tensors"].items():
        entry = manifest["tensors"].get(entry.get("same_as"), entry)
        n = int(torch.Size(entry["shape"]).numel())
        out[key] = flat[entry["offset"] : entry["offset"] + n].view(entry["shape"])
    return out


def test_export_round_trips_and_stores_a_shared_table_once():
    """export_bytes on fresh models (no build needed): every tensor comes back bit for bit;
    the encoder–decoder's shared embedding is stored once and named twice."""
    from attention_src.decoder import CausalLM
    from attention_src.encoder_decoder import EncoderDecoder

    torch.manual_seed(0)
    causal = CausalLM(vocab_size=10, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=6)
    manifest, data = live_small.export_bytes("causal-copy", causal)
    for key, value in _unpack(manifest, data).items():
        assert torch.equal(value, causal.state_dict()[key]), key
    assert manifest["config"]["max_len"] == 6 and manifest["config"]["symbols"] == list(range(10))
    assert manifest["weights"].startswith("causal-copy.") and len(data) == manifest["weights_bytes"]

    seq = EncoderDecoder(12, 8, 2, 1, 16, dropout=0.0, max_len=9, norm_first=True)
    manifest, data = live_small.export_bytes("encoder-decoder-copy", seq)
    shared = manifest["tensors"]["target_embedding.weight"]
    assert shared == {"same_as": "encoder.embedding.weight"}
    params = sum(p.numel() for p in seq.parameters())  # the shared table once
    assert len(data) == 4 * params
    for key, value in _unpack(manifest, data).items():
        assert torch.equal(value, seq.state_dict()[key]), key
    assert manifest["config"]["bos"] == 0 and 0 not in manifest["config"]["symbols"]


def test_export_refuses_an_unknown_model():
    with pytest.raises(ValueError, match=r"name must be one of \['causal-copy'"):
        live_small.export_bytes("gpt-2", None)
