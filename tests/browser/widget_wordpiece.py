"""MiniLM's tokenizer in the page (docs/assets/javascripts/wordpiece.js) equals `tokenizers`.

Run inside the English real-encoder chapter's one visit of the browser pass (tests/browser/
widgets.py calls :func:`drive`; test_widgets.py's test calls :func:`check`): in one
``page.evaluate`` the page's script tokenizes

- every sentence of tests/site/data/wordpiece_sentences.jsonl (punctuation, accents, numbers,
  unknown words, Chinese, mixed scripts, emoji, whitespace and control characters, very long
  words, added tokens typed in the text, the page's own examples), the page's own example
  sentences read from both editions of the chapter, and 300 strings drawn from a seeded
  mixture of all of these;
- every code point of planes 0-3 and 14, and the first and last 256 of every other plane, one
  at a time (the character classes come from tables in the script, frozen at the Unicode
  version `tokenizers` uses; this sweep checks them, and the browser's NFD and lowercase,
  against `tokenizers` itself);

and the check compares tokens and ids with `tokenizers`' exactly (tokenizer.json of the
installed model package, padding and truncation off, as ``MiniLMTokenizer``). The vocabulary
the page reads is vocab.txt written from tokenizer.json in id order, the format of the build's
export ``assets/live/minilm/vocab.txt`` (test_wordpiece.py compares them byte for byte).

So that the check can fail, the same evaluate also runs six deliberately broken tokenizers
(accents kept, no Chinese spacing, no cleaning, no lowercase, no word-length limit, added tokens
not matched): each must differ from `tokenizers` on some sentence. It also times fromVocab and
the encoding of a 16-token and a 512-token text (printed and written to
test-artifacts/wordpiece.json, not asserted), and reads the vocabulary's size, raw and gzipped.
test_wordpiece.py holds the checks that need no browser and the test set's helpers.
"""

from __future__ import annotations

import gzip
import json
import time

import pytest

from tests.site.build import ARTIFACTS
from tests.site.test_wordpiece import (
    MUTANTS,
    SCRIPT,
    SWEEP_CHUNK,
    _sweep_differences,
    _text_for_tokens,
    fuzz_sentences,
    load_tokenizer,
    load_tokenizer_json,
    make_vocab_text,
    page_sentences,
    read_sentences,
    sweep_chunks,
    sweep_ranges,
)

EVALUATE_JS = r"""async (argsJson) => {
  const args = JSON.parse(argsJson);
  const {vocab, tokenizerJson, sentences, sweep, sweepChunk, mutants, timing} = args;
  const W = window.AttentionWordPiece;
  const out = {};
  out.options = W.optionsFromTokenizerJson(tokenizerJson);
  out.defaults = W.DEFAULTS;
  let t = performance.now();
  const tok = W.fromVocab(vocab, out.options);
  out.fromVocabMs = performance.now() - t;
  out.vocabSize = tok.vocabSize;
  out.encoded = sentences.map((s) => {
    const e = tok.encode(s);
    return {tokens: e.tokens, ids: e.ids, unknown: e.unknown, unknownAt: e.unknownAt};
  });
  // The sweep: the same texts as sweep_chunks() builds, their ids without [CLS] and [SEP].
  t = performance.now();
  const words = [];
  for (const [lo, hi] of sweep) {
    for (let c = lo; c <= hi; c++) words.push("a" + String.fromCodePoint(c) + "b");
  }
  out.sweep = [];
  for (let i = 0; i < words.length; i += sweepChunk) {
    out.sweep.push(tok.encode(words.slice(i, i + sweepChunk).join(" ")).ids.slice(1, -1).join(","));
  }
  out.sweepMs = performance.now() - t;
  // Lone surrogates (a JavaScript string can hold one, Rust's cannot): dropped like U+FFFD.
  const high = String.fromCharCode(0xd800);
  const low = String.fromCharCode(0xdc00);
  const lone = (s) => s.replace(/~/g, high).replace(/\^/g, low);
  out.surrogates = ["a~b", "^x", "x~", "^~"].map((s) => tok.encode(lone(s)).ids);
  out.mutants = {};
  t = performance.now();
  for (const [name, options] of Object.entries(mutants)) {
    const broken = W.fromVocab(vocab, Object.assign({}, out.options, options));
    out.mutants[name] = sentences.map((s) => broken.encode(s).ids);
  }
  out.mutantsMs = performance.now() - t;
  // Timing, per encode: the median of 5 runs of 200 encodes each, after 20 to warm up
  // (the browser's clock is coarse: one encode is far below its step).
  const median = (f) => {
    for (let k = 0; k < 20; k++) f();
    const times = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      for (let k = 0; k < 200; k++) f();
      times.push((performance.now() - t0) / 200);
    }
    return times.sort((a, b) => a - b)[2];
  };
  out.timing = {};
  for (const [name, text] of Object.entries(timing)) {
    out.timing[name] = {ms: median(() => tok.encode(text)), tokens: tok.encode(text).ids.length};
  }
  // Bad input: clear errors, naming what is wrong.
  const error = (f) => {
    try { f(); return null; } catch (e) { return e.name + ": " + e.message; }
  };
  out.errors = {
    vocabNotText: error(() => W.fromVocab(42)),
    textNotString: error(() => tok.encode(null)),
    noUnk: error(() => W.fromVocab("[CLS]\n[SEP]\na\n", {addedTokens: []})),
    duplicate: error(() => W.fromVocab("[UNK]\n[CLS]\n[SEP]\na\na\n", {addedTokens: []})),
    emptyLine: error(() => W.fromVocab("[UNK]\n\n[CLS]\n[SEP]\n", {addedTokens: []})),
    unknownOption: error(() => W.fromVocab(vocab, {lowercas: true})),
    otherTemplate: error(() => W.optionsFromTokenizerJson(
      Object.assign({}, tokenizerJson, {post_processor: {type: "RobertaProcessing"}}))),
    otherPipeline: error(() => W.optionsFromTokenizerJson(
      Object.assign({}, tokenizerJson, {model: {type: "BPE"}}))),
  };
  return JSON.stringify(out);
}"""


def _inputs() -> dict:
    tokenizer, tokenizer_json = load_tokenizer(), load_tokenizer_json()
    sentences = read_sentences()
    sentences += [s for s in page_sentences() if s not in sentences]
    sentences += fuzz_sentences()
    ranges = sweep_ranges()
    timing = {"16 tokens": _text_for_tokens(tokenizer, 16)}
    timing["512 tokens"] = _text_for_tokens(tokenizer, 512)
    return {
        "vocab": make_vocab_text(),
        "tokenizerJson": {k: v for k, v in tokenizer_json.items() if k != "model"}
        | {"model": {k: v for k, v in tokenizer_json["model"].items() if k != "vocab"}},
        "sentences": sentences,
        "sweep": ranges,
        "sweepChunk": SWEEP_CHUNK,
        "mutants": MUTANTS,
        "timing": timing,
    }


def drive(page, zh: bool, deliberate: set[str]) -> dict:
    """The page's tokenizer on every text of the test set, in one evaluate."""
    args = _inputs()
    started = time.perf_counter()
    out = json.loads(page.evaluate(EVALUATE_JS, json.dumps(args)))
    out["seconds"] = time.perf_counter() - started
    out["args"] = {"sentences": args["sentences"], "sweep": args["sweep"], "timing": args["timing"]}
    return out


def _first_differences(expected: list, got: list, labels: list, n: int = 8) -> list[str]:
    return [
        f"{label!r}:\n    tokenizers {e}\n    page       {g}"
        for label, e, g in zip(labels, expected, got, strict=True)
        if e != g
    ][:n]


def check(out: dict, site) -> dict:
    """Tokens and ids exactly `tokenizers`', the sweep, the broken tokenizers caught, the
    errors named; returns the figures (written to test-artifacts/wordpiece.json)."""
    tokenizer = load_tokenizer()
    sentences, ranges = out["args"]["sentences"], out["args"]["sweep"]
    chunks = sweep_chunks(ranges)
    # The options read off tokenizer.json are the script's defaults (what fromVocab(text) uses).
    assert out["options"] == out["defaults"], (out["options"], out["defaults"])
    assert out["vocabSize"] == tokenizer.get_vocab_size()

    expected = [tokenizer.encode(s) for s in sentences]
    want = [{"tokens": e.tokens, "ids": e.ids} for e in expected]
    got = [{"tokens": o["tokens"], "ids": o["ids"]} for o in out["encoded"]]
    wrong = _first_differences(want, got, sentences)
    n_wrong = sum(w != g for w, g in zip(want, got, strict=True))
    assert not wrong, f"{n_wrong} of {len(sentences)} texts differ:\n" + "\n".join(wrong)
    # `unknown` lists a word for each [UNK] that is not an [UNK] typed in the text, and
    # `unknownAt` where that [UNK] is: the word is the text `tokenizers` maps that token to
    # (its offsets), normalised (what the explorer shows beside the [UNK]).
    for s, o, e in zip(sentences, out["encoded"], expected, strict=True):
        typed = s.count("[UNK]")
        assert len(o["unknown"]) == o["tokens"].count("[UNK]") - typed, (s, o["unknown"])
        assert len(o["unknownAt"]) == len(o["unknown"]), (s, o["unknownAt"])
        for at, word in zip(o["unknownAt"], o["unknown"], strict=True):
            start, end = e.offsets[at]
            text = tokenizer.normalizer.normalize_str(s[start:end]).strip()
            assert (o["tokens"][at], word) == ("[UNK]", text), (s, at, word, text)

    assert len(out["sweep"]) == len(chunks)
    wanted = tokenizer.encode_batch(chunks, add_special_tokens=False)
    n_wrong = sum(",".join(map(str, e.ids)) != g for e, g in zip(wanted, out["sweep"], strict=True))
    if n_wrong:
        wrong = _sweep_differences(tokenizer, chunks, out["sweep"])
        n_cps = sum(hi + 1 - lo for lo, hi in ranges)
        pytest.fail(
            f"{n_wrong} of {len(chunks)} texts of the {n_cps}-code-point sweep differ:\n"
            + "\n".join(wrong)
        )

    lone = [
        tokenizer.encode(s.replace("~", "\ufffd").replace("^", "\ufffd")).ids
        for s in ["a~b", "^x", "x~", "^~"]
    ]
    assert out["surrogates"] == lone, (out["surrogates"], lone)

    # The test can fail: each broken tokenizer differs from `tokenizers` somewhere.
    want_ids = [e.ids for e in expected]
    caught = {
        name: sum(g != w for g, w in zip(ids, want_ids, strict=True))
        for name, ids in out["mutants"].items()
    }
    assert all(caught.values()), f"broken tokenizers the sentences do not catch: {caught}"

    errors = out["errors"]
    assert errors["vocabNotText"].startswith("TypeError: vocabText must be a string"), errors
    assert errors["textNotString"].startswith("TypeError: text must be a string"), errors
    assert "no unkToken" in errors["noUnk"], errors
    assert 'token "a" on line 5 is already on line 4' in errors["duplicate"], errors
    assert "line 2 is empty" in errors["emptyLine"], errors
    assert "only WordPiece" in errors["otherPipeline"], errors
    assert errors["unknownOption"].startswith("TypeError: unknown option(s) lowercas;"), errors
    assert "only a [CLS] sequence [SEP] template" in errors["otherTemplate"], errors

    raw = make_vocab_text().encode("utf-8")
    figures = {
        "texts": len(sentences),
        "code points swept": sum(hi + 1 - lo for lo, hi in ranges),
        "seconds in the page's visit": round(out["seconds"], 2),
        "sweep ms (page)": round(out["sweepMs"]),
        "broken tokenizers ms (page)": round(out["mutantsMs"]),
        "broken tokenizers caught (texts differing)": caught,
        "fromVocab ms": round(out["fromVocabMs"], 2),
        "encode ms (median of 5 x 200)": {k: round(v["ms"], 3) for k, v in out["timing"].items()},
        "tokens": {k: v["tokens"] for k, v in out["timing"].items()},
        "vocab.txt bytes": len(raw),
        "vocab.txt gzip -9 bytes": len(gzip.compress(raw, compresslevel=9, mtime=0)),
        "wordpiece.js bytes": (site / SCRIPT).stat().st_size,
    }
    (ARTIFACTS / "wordpiece.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return figures
