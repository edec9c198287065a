"""MiniLM in the reader's browser (chapter 18's "Your own sentence") equals PyTorch.

The widget is exercised inside the page's one visit of the browser pass (tests/browser/
visit.py, ``page_reports``; tests/browser/widgets.py finds it on the page and calls
:func:`drive`), before that visit's accessibility audit, so the audit sees the page with the
reader's result on it. In the English chapter the page downloads the build's export
(``assets/live/minilm``: int16 rows with float32 scales, site_tools/outputs/live_models.py)
once, then, in one ``page.evaluate``, tokenizes each of :data:`SENTENCES` with the page's
WordPiece (docs/assets/javascripts/wordpiece.js) and runs
docs/assets/javascripts/attention-live.js's forward pass on them; then the widget as a reader
uses it: the page's own example through the form, the bad inputs (empty box, more than 512
tokens, words that become [UNK]), then, with the pointer resting on a token, Run pressed with
the keyboard (:func:`_reader_checks`). In the Chinese chapter: a model file that fails to load
(the request for the weights is aborted): a message in the page, the button usable again; then
the page's example through the form, and a mixed sentence whose Chinese characters become
[UNK], Run pressed with the keyboard.

The checks (:func:`check_english`, :func:`check_chinese`, called by test_widgets.py's tests)
compare with the chapter's own ``MiniLM`` (``load_minilm``) on the ORIGINAL float32 weights, so
the export's rounding is inside what is measured:

- tokens and ids identical to ``tokenizers`` (``MiniLMTokenizer``);
- every attention weight of every layer and head within :data:`WEIGHT_TOL` (absolute);
- the sentence vectors' cosine similarity within :data:`COSINE_TOL`;
- what the chapter says of Chinese: the vocabulary holds few Chinese characters (under 1% of
  its entries), and in each plain Chinese sentence of :data:`SENTENCES` most characters
  become [UNK];
- what a reader meets: an error (an empty box, a sentence too long) clears the last
  sentence's explorer and similarity; each [UNK] names the text it stands for; Run pressed
  with the keyboard keeps the focus on the button (while the model loads, too: in the
  Chinese visit); a pointer resting where the explorer appears does not choose the query, a pointer
  that moves does; the explorer is four tab stops whatever the sentence (the layer, the
  head, the tokens, the grid: the arrow keys move inside), and at 390 px every token and
  thumbnail is at least 24 x 24 px (WCAG 2.2's minimum target).

The max |difference| reached and the page's timings (load, first map of a 16-token
sentence) are printed and written to test-artifacts/live-minilm.json, not asserted.
test_live_minilm.py keeps what needs a browser of another kind: JavaScript off, and file://.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import time

import numpy as np
import torch

from tests.site.build import ARTIFACTS

PAGE = "chapters/real-encoder/"
PAGE_ZH = "zh/chapters/real-encoder/"
MODEL = "assets/live/minilm/model.json"
WEIGHT_TOL = 2e-3  # issue 37: attention weights within 2e-3 of PyTorch on float32 weights
COSINE_TOL = 1e-3
TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."
# The page's own examples first (the chapter's explorer, similarity and sinks sentences),
# then punctuation, accents, numbers, unknown characters, Chinese, mixed text, a long one.
SENTENCES = [
    TIRED,
    WIDE,
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Attention lets every token read from every other token.",
    "She opened the window, and the cold air rushed in.",
    "Paris is the capital of France.",
    "Where did you put the keys?",
    "The results, surprisingly, were the same in every run.",
    "Two dogs chase a ball across the park.",
    "I can't believe it's already December!",
    "The committee approved the budget after a long debate.",
    "The animal was too tired to cross the street.",
    "naïve café résumé, Zürich: 3.14159 and 1,000,000 (approx.)",
    "I ❤ the ☃ snowman 🙂",
    "我们在北京吃了烤鸭，味道很好。",
    "Attention 注意力 is all you need.",
    "qwxzyk blorptastic GRONKULATION!!!",
    "a",
    " ".join(["The long sentence keeps going, word after word,"] * 4) + " until it stops.",
]
TOO_LONG = "word " * 600  # 602 tokens with [CLS] and [SEP]: more than 512 positions

RUN_ALL_JS = """async ([modelUrl, sentences, pythonIds]) => {
  const live = window.AttentionLive;
  const base64 = (floats) => {  // a Float32Array's bytes, compact to carry back to Python
    const bytes = new Uint8Array(floats.buffer, floats.byteOffset, floats.byteLength);
    let text = '';
    for (let i = 0; i < bytes.length; i += 0x8000) {
      text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(text);
  };
  const t0 = performance.now();
  const model = await live.minilm.load(modelUrl);
  const loadMs = performance.now() - t0;
  const tok = live.minilm.tokenizer(model);
  const out = [];
  for (let s = 0; s < sentences.length; s++) {
    const enc = tok.encode(sentences[s]);
    const start = performance.now();
    // the forward pass on Python's ids: a tokenizer mismatch cannot hide a forward mismatch
    const r = await live.minilm.forward(model, pythonIds[s]);
    const ms = performance.now() - start;
    out.push({tokens: enc.tokens, ids: enc.ids, ms: ms,
              weights: r.weights.map((w) => base64(w.data)),
              embedding: Array.from(live.ops.meanPool(r.hidden, null).data)});
  }
  return {loadMs: loadMs, sentences: out, bytes: model.manifest.bytes + model.manifest.vocab_bytes};
}"""

FORM_JS = """async ([first, second, press]) => {
  const root = document.querySelector('.live-minilm');
  const button = root.querySelector('button[type=submit]');
  root.querySelector('textarea').value = first;
  root.querySelector('input').value = second;
  if (press !== false) button.click();  // false: the test pressed it with the keyboard
  const progress = root.querySelector('progress');
  const seen = {progress: 0, loading: false};  // the progress bar, while the model loads
  await new Promise((done) => {
    const poll = () => {
      if (!progress.hidden) seen.progress = Math.max(seen.progress, progress.value / progress.max);
      if (/Loading the weights|正在加载权重/.test(root.querySelector('.live-status').textContent)) {
        seen.loading = true;
      }
      return (root.dataset.liveState === 'done' || root.dataset.liveState === 'error')
        ? done() : setTimeout(poll, 10);
    };
    setTimeout(poll, 0);
  });
  const explorer = root.querySelector('.live-explorer');
  const chips = [...explorer.querySelectorAll('.ae-token')];
  const pick = (name) => explorer.querySelector('select[data-ae=' + name + ']');
  const tabStops = [...explorer.querySelectorAll('button, select, input, [tabindex]')]
    .filter((e) => e.tabIndex >= 0 && !e.disabled);
  return {
    state: root.dataset.liveState,
    error: root.querySelector('.live-error').textContent,
    status: root.querySelector('.live-status').textContent,
    similarityText: root.querySelector('.live-similarity').textContent,
    similarityLive: root.querySelector('.live-similarity').getAttribute('aria-live'),
    similarity: root.liveResult ? root.liveResult.similarity : null,
    mapMs: root.liveResult ? root.liveResult.mapMs : null,
    tokens: chips.map((c) => c.querySelector('.ae-text').textContent),
    shown: chips.map((c) => Number(c.dataset.weight)),
    layer: chips.length ? Number(pick('layer').value) : null,
    head: chips.length ? Number(pick('head').value) : null,
    query: chips.findIndex((c) => c.getAttribute('aria-pressed') === 'true'),
    explorerHidden: explorer.hidden,
    progressHidden: progress.hidden,
    seen: seen,
    stands: chips.map((c) => (c.querySelector('.ae-stands') || {}).textContent || ''),
    labels: chips.map((c) => c.getAttribute('aria-label')),
    tabStops: tabStops.map((e) => e.className || e.tagName),
    focusOnButton: document.activeElement === button,
  };
}"""

# Three frames: after a change of the page, the browser notes what is under the pointer.
FRAMES_JS = """async () => {
  for (let i = 0; i < 3; i++) await new Promise((r) => requestAnimationFrame(() => r()));
}"""

# The boxes' text, before Run is pressed with the keyboard.
TYPE_JS = """([first, second]) => {
  const root = document.querySelector('.live-minilm');
  root.querySelector('textarea').value = first;
  root.querySelector('input').value = second;
  root.dataset.liveState = '';
}"""

# Where the focus is, which token is the query and which head is selected, in the explorer.
EXPLORER_STATE_JS = """() => {
  const explorer = document.querySelector('.live-minilm .live-explorer');
  const chips = [...explorer.querySelectorAll('.ae-token')];
  const thumbs = [...explorer.querySelectorAll('.ae-thumb')];
  const at = (e) => e && [Number(e.dataset.layer), Number(e.dataset.head)];
  return {
    query: chips.findIndex((c) => c.getAttribute('aria-pressed') === 'true'),
    focusChip: chips.indexOf(document.activeElement),
    tabbableChips: chips.filter((c) => c.tabIndex >= 0).map((c) => chips.indexOf(c)),
    selected: at(explorer.querySelector('.ae-thumb[aria-pressed=true]')),
    focusThumb: at(thumbs.includes(document.activeElement) ? document.activeElement : null),
    tabbableThumbs: thumbs.filter((t) => t.tabIndex >= 0).map(at),
  };
}"""

# The smallest width and height of the explorer's tokens and thumbnails, as laid out.
TARGETS_JS = """() => {
  const explorer = document.querySelector('.live-minilm .live-explorer');
  const least = (selector) => {
    const boxes = [...explorer.querySelectorAll(selector)].map((e) => e.getBoundingClientRect());
    return [Math.min(...boxes.map((b) => b.width)), Math.min(...boxes.map((b) => b.height))];
  };
  return {token: least('.ae-token'), thumb: least('.ae-thumb')};
}"""

WIDGET_JS = """() => {
  const root = document.querySelector('.live-minilm');
  const button = root && root.querySelector('button[type=submit]');
  return root && {
    ready: root.classList.contains('live-ready'),
    nojs: root.querySelectorAll('.live-nojs').length,
    button: button.textContent, disabled: button.disabled,
    labels: [...root.querySelectorAll('label')].map((l) =>
      [l.textContent, !!document.getElementById(l.getAttribute('for'))]),
    live: [...root.querySelectorAll('[aria-live], [role=alert]')].length,
    bytes: Number(root.dataset.liveBytes),
    error: root.querySelector('.live-error').textContent,
  };
}"""


SECOND = "The animal was too tired to cross the street."
MIXED = "Attention 注意力 is all you need."  # 注 and 意 are not in the vocabulary
MIN_TARGET_PX = 24  # WCAG 2.2, 2.5.8 Target Size (Minimum)


@functools.cache
def tokenizer():
    from attention_src.models.minilm import load_minilm

    return load_minilm()[1]


@functools.cache
def reference() -> list[dict]:
    """The chapter's MiniLM on the original float32 weights: per sentence the tokens, ids,
    weights ``(layers, H, L, L)`` and sentence vector."""
    from attention_src.models.minilm import load_minilm

    model, tok = load_minilm()
    out = []
    for sentence in SENTENCES:
        batch = tok([sentence])
        with torch.no_grad():
            _, weights = model(batch["input_ids"], batch["attention_mask"])
            vector = model.sentence_embedding(batch["input_ids"], batch["attention_mask"])
        out.append(
            {
                "tokens": tok.tokens(sentence),
                "ids": batch["input_ids"][0].tolist(),
                "weights": torch.stack(weights, 1)[0],  # (layers, H, L, L)
                "embedding": vector[0],
            }
        )
    return out


@functools.cache
def reference_similarity(first: str, second: str) -> float:
    from attention_src.models.minilm import load_minilm

    model, tok = load_minilm()
    batch = tok([first, second])
    with torch.no_grad():
        e = model.sentence_embedding(batch["input_ids"], batch["attention_mask"])
    return (e[0] @ e[1]).item()


def _weights(c: dict, like: torch.Tensor) -> torch.Tensor:
    """The page's weights of one sentence (one base64 float32 block per layer) as ``like``."""
    layers = [np.frombuffer(base64.b64decode(w), dtype="<f4") for w in c["weights"]]
    return torch.from_numpy(np.stack(layers)).view_as(like)


# ---- in the page's visit ----------------------------------------------------------------


def drive(page, zh: bool, deliberate: set[str]) -> dict:
    """What the page computes and shows, the reader's way; every URL this makes fail on
    purpose goes into ``deliberate`` (the visit does not report it as a problem)."""
    clock = [time.perf_counter()]
    out: dict = {"widget": page.evaluate(WIDGET_JS)}
    if zh:
        # the weights fail to load: a message, the button usable again; then they load
        def abort(route):
            deliberate.add(route.request.url)
            route.abort()

        failing = re.compile(r".*/weights-[0-9a-f]+\.bin$")
        page.route(failing, abort)
        out["failed"] = page.evaluate(FORM_JS, [TIRED, ""])
        page.unroute(failing)
        out["after_failure"] = page.evaluate(WIDGET_JS)
        out["form"] = _keyboard_run(page, TIRED, SECOND)  # the model loads
        out["mixed"] = _keyboard_run(page, MIXED, "")
        return out
    ids = [tokenizer()([s])["input_ids"][0].tolist() for s in SENTENCES]
    site = page.url.split("chapters/")[0]  # the edition's root: the model is under its assets
    out["computed"] = page.evaluate(RUN_ALL_JS, [site + MODEL, SENTENCES, ids])
    clock.append(time.perf_counter())
    out["form"] = page.evaluate(FORM_JS, [TIRED, SECOND])
    clock.append(time.perf_counter())
    # the pointer rests on a token that is not the query (the first after [CLS]), then Run
    # is pressed with the keyboard: the same sentences, so the new explorer appears where
    # the last one was, under the resting pointer
    chip = page.locator(".live-minilm .ae-token").nth(1)
    chip.scroll_into_view_if_needed()
    box = chip.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    out["sixteen"] = _keyboard_run(page, TIRED, SECOND)  # 16 tokens, the model loaded
    page.evaluate(FRAMES_JS)  # time for the page to note what is under the pointer
    out["rested"] = page.evaluate(EXPLORER_STATE_JS)
    out["explorer"] = _explorer_keys(page, box)
    clock.append(time.perf_counter())
    # the page keeps the last of these (a result with [UNK]s) for the visit's audit
    out["bad"] = {
        "empty": page.evaluate(FORM_JS, ["   ", ""]),
        "too_long": page.evaluate(FORM_JS, [TOO_LONG, ""]),
        "second_too_long": page.evaluate(FORM_JS, ["Fine.", TOO_LONG]),
        "unknown": page.evaluate(FORM_JS, ["I ❤ the ☃ snowman", ""]),
    }
    clock.append(time.perf_counter())
    out["seconds"] = dict(
        zip(
            ("page_and_sentences", "form", "keyboard_run", "bad_inputs"),
            np.diff(clock).tolist(),
            strict=True,
        )
    )
    return out


def _keyboard_run(page, first: str, second: str) -> dict:
    """The boxes filled, then Run pressed with the keyboard (the focus on it, Enter)."""
    page.evaluate(TYPE_JS, [first, second])
    page.locator(".live-minilm button[type=submit]").focus()
    page.keyboard.press("Enter")
    return page.evaluate(FORM_JS, [first, second, False])


def _explorer_keys(page, box: dict) -> dict:
    """The explorer of the last run, by keyboard and pointer: the query's chip and the
    selected thumbnail take the focus and the arrow keys move it; a pointer that moves
    chooses the token under it; the sizes of the targets at 390 px."""
    from . import a11y

    state = lambda: page.evaluate(EXPLORER_STATE_JS)  # noqa: E731
    out = {}
    explorer = page.locator(".live-minilm .live-explorer")
    explorer.locator(".ae-token[aria-pressed='true']").focus()  # the query's chip
    page.keyboard.press("ArrowRight")
    out["token_right"] = state()
    explorer.locator(".ae-thumb[aria-pressed='true']").focus()  # the selected head
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    out["thumb_down_right"] = state()
    # the pointer moves a little, still over the token it rested on
    page.mouse.move(box["x"] + box["width"] / 2 + 3, box["y"] + box["height"] / 2 + 1)
    out["pointer_moved"] = state()
    page.mouse.move(0, 0)
    a11y.set_variant(page, "light", 390)
    out["targets_390"] = page.evaluate(TARGETS_JS)
    a11y.set_variant(page, "light", 1280)
    return out


# ---- the checks, on what the visit returned ------------------------------------------------


def _widget_words(w: dict, bytes_: int | None = None) -> None:
    assert w is not None, "no .live-minilm widget on the page"
    assert w["ready"] and w["nojs"] == 0, w
    if bytes_ is not None:
        assert w["bytes"] == bytes_, "the button's size is not the export's"
    assert f"{w['bytes'] / 1e6:.1f} MB" in w["button"], w["button"]
    assert len(w["labels"]) == 2 and all(found for _, found in w["labels"]), w["labels"]
    assert w["live"] >= 2, "no aria-live status or alert"
    assert w["error"] == "", w["error"]


def _form(form: dict) -> None:
    """The page's example through the form: the explorer shows the model's weights, the
    similarity is the model's, both announced."""
    assert form["state"] == "done" and form["error"] == "", form
    # the first press downloads the model: a progress bar and a status while it loads
    assert form["seen"]["loading"] and form["seen"]["progress"] > 0, form["seen"]
    assert form["progressHidden"]
    assert not form["explorerHidden"]
    ref = reference()[0]
    assert form["tokens"] == ref["tokens"]
    want = ref["weights"][form["layer"], form["head"], form["query"]]
    shown = torch.tensor(form["shown"], dtype=torch.float32)
    assert (shown - want).abs().max().item() <= WEIGHT_TOL
    assert abs(float(form["similarity"]) - reference_similarity(TIRED, SECOND)) <= COSINE_TOL
    # announced: the status and the similarity are aria-live regions
    assert "16" in form["status"], form["status"]
    assert form["similarity"] in form["similarityText"] and form["similarityLive"] == "polite"


def check_english(run: dict) -> dict:
    """Every check of the English chapter's widget; returns the figures measured."""
    computed, refs = run["computed"], reference()
    _widget_words(run["widget"], computed["bytes"])
    diffs = []
    for sentence, c, r in zip(SENTENCES, computed["sentences"], refs, strict=True):
        assert c["tokens"] == r["tokens"], sentence
        assert c["ids"] == r["ids"], sentence
        got = _weights(c, r["weights"])
        diff = (got - r["weights"]).abs().max().item()
        assert diff <= WEIGHT_TOL, f"{sentence!r}: max |difference| {diff:.2e}"
        rows = got.sum(-1)
        assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
        cos = torch.nn.functional.cosine_similarity(torch.tensor(c["embedding"]), r["embedding"], 0)
        assert cos.item() >= 1 - COSINE_TOL, f"{sentence!r}: cosine {cos.item():.5f}"
        diffs.append(diff)
    _form(run["form"])
    assert "16 tokens" in run["form"]["status"], run["form"]["status"]
    bad = run["bad"]
    english = {
        "empty": "Type a sentence first.",
        "too_long": "This sentence is 602 tokens, more than MiniLM's 512 positions",
        "second_too_long": "The second sentence is 602 tokens",
        "unknown": "became [UNK]: ❤ ☃",
    }
    for case, message in english.items():
        assert message in bad[case]["error"], (case, bad[case])
    for case in ("empty", "too_long", "second_too_long"):
        assert bad[case]["state"] == "error", (case, bad[case])
        # the last sentence's explorer and similarity are gone with the error
        assert bad[case]["explorerHidden"] and bad[case]["tokens"] == [], (case, bad[case])
        assert bad[case]["similarityText"] == "" and bad[case]["similarity"] is None, case
    assert bad["unknown"]["state"] == "done", "words with [UNK] are still computed"
    _stands(bad["unknown"], {"❤": "[UNK] ❤ ", "☃": "[UNK] ☃ "})
    _chinese_claims(computed["sentences"])
    _reader_checks(run)
    summary = {
        "sentences": len(SENTENCES),
        "max_abs_weight_difference": max(diffs),
        "per_sentence": diffs,
        "load_ms": computed["loadMs"],
        "first_map_ms_16_tokens": run["sixteen"]["mapMs"],
        "forward_ms": [c["ms"] for c in computed["sentences"]],
        "bytes": computed["bytes"],
        "test_seconds": run["seconds"],
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "live-minilm.json").write_text(json.dumps(summary, indent=1), "utf-8")
    print(
        f"\nlive MiniLM: max |weight difference| {max(diffs):.2e} over {len(SENTENCES)} "
        f"sentences; load {computed['loadMs']:.0f} ms for {computed['bytes'] / 1e6:.1f} MB; "
        f"first map of 16 tokens {run['sixteen']['mapMs']:.0f} ms; "
        f"test phases (s) {run['seconds']}"
    )
    return summary


def _stands(form: dict, want: dict[str, str]) -> None:
    """Each [UNK] of the explorer names the text it stands for, in its words and its label
    (``want``: that text -> the start of the label)."""
    unk = [i for i, t in enumerate(form["tokens"]) if t == "[UNK]"]
    assert [form["stands"][i] for i in unk] == list(want), (form["tokens"], form["stands"])
    for i, label in zip(unk, want.values(), strict=True):
        assert form["labels"][i].startswith(label), (form["labels"][i], label)
    others = [s for i, s in enumerate(form["stands"]) if i not in unk]
    assert not any(others), f"a token that is not [UNK] says it stands for something: {others}"


def _chinese_claims(sentences: list[dict]) -> None:
    """The chapter's words on Chinese: the vocabulary holds few Chinese characters, so that
    in a Chinese sentence most characters become [UNK] (the page's own tokenizer)."""
    from tests.site.test_wordpiece import load_tokenizer

    def cjk(text: str) -> list[str]:
        return [c for c in text if "\u4e00" <= c <= "\u9fff"]

    vocab = load_tokenizer().get_vocab()
    held = [t for t in vocab if len(t) == 1 and cjk(t)]
    assert 0 < len(held) < 0.01 * len(vocab), f"{len(held)} of {len(vocab)} are Chinese"
    plain = [(s, c) for s, c in zip(SENTENCES, sentences, strict=True) if len(cjk(s)) > len(s) / 2]
    assert plain, "no plain Chinese sentence among SENTENCES"
    for sentence, c in plain:
        unknown = c["tokens"].count("[UNK]")
        assert unknown > len(cjk(sentence)) / 2, (sentence, c["tokens"])


def _reader_checks(run: dict) -> None:
    """Focus, the resting pointer, the tab stops, the arrow keys, the targets' size."""
    sixteen, rested = run["sixteen"], run["rested"]
    assert sixteen["state"] == "done", sixteen
    assert sixteen["focusOnButton"], "Run pressed with the keyboard: the focus left the button"
    query = sixteen["tokens"].index("it")  # the explorer's first query
    assert rested["query"] == query, (
        f"a pointer resting on token {rested['query']} made it the query (want {query})"
    )
    # four tab stops: the layer, the head, the query's chip, the selected thumbnail
    stops = sixteen["tabStops"]
    assert len(stops) == 4 and len(sixteen["tokens"]) == 16, stops
    keys = run["explorer"]
    right = keys["token_right"]
    assert right["query"] == right["focusChip"] == query + 1, right
    assert right["tabbableChips"] == [query + 1], right
    grid = keys["thumb_down_right"]
    assert grid["selected"] == grid["focusThumb"] == [1, 1] and grid["tabbableThumbs"] == [[1, 1]]
    moved = keys["pointer_moved"]
    assert moved["query"] == 1, f"a pointer moving over token 1 did not choose it: {moved}"
    for kind, (width, height) in keys["targets_390"].items():
        assert min(width, height) >= MIN_TARGET_PX, f"a {kind} is {width:.1f} x {height:.1f} px"


def check_chinese(run: dict) -> None:
    """The Chinese chapter's widget: its words, a failed load, then the example's result."""
    widget = run["widget"]
    _widget_words(widget)
    assert "加载 MiniLM" in widget["button"], widget
    assert [label for label, _ in widget["labels"]] == [
        "你的句子",
        "第二个句子（用来比较句向量，可留空）",
    ]
    failed = run["failed"]
    assert failed["state"] == "error" and "模型文件加载失败" in failed["error"], failed
    assert failed["explorerHidden"]
    assert not run["after_failure"]["disabled"], "the button stays disabled after the failure"
    _form(run["form"])
    assert run["form"]["focusOnButton"], "Run pressed with the keyboard: the focus left it"
    mixed = run["mixed"]
    assert mixed["state"] == "done" and mixed["focusOnButton"], mixed
    _stands(mixed, {"注": "[UNK] 注 ", "意": "[UNK] 意 "})
