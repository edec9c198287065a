"""MiniLM's tokenizer in the page (docs/assets/javascripts/wordpiece.js) equals `tokenizers`.

The real-encoder chapter tokenizes the reader's own sentence in the browser. This module opens
that built page once in headless Chromium (every request to another host aborted and reported)
and, in one ``page.evaluate``, tokenizes with the page's script:

- every sentence of tests/docs/data/wordpiece_sentences.jsonl (punctuation, accents, numbers,
  unknown words, Chinese, mixed scripts, emoji, whitespace and control characters, very long
  words, added tokens typed in the text, the page's own examples), the page's own example
  sentences read from both editions of the chapter, and 300 strings drawn from a seeded
  mixture of all of these;
- every code point of planes 0-3 and 14, and the first and last 256 of every other plane, one
  at a time (the character classes come from tables in the script, frozen at the Unicode
  version `tokenizers` uses; this sweep checks them, and the browser's NFD and lowercase,
  against `tokenizers` itself);

and checks tokens and ids are exactly `tokenizers`' (tokenizer.json of the installed model
package, padding and truncation off, as ``MiniLMTokenizer``). The vocabulary the page reads is
vocab.txt written here from tokenizer.json in id order, the format of the build's export
``assets/live/minilm/vocab.txt`` (compared byte for byte when the build writes one).

So that the test can fail, the same evaluate also runs six deliberately broken tokenizers
(accents kept, no Chinese spacing, no cleaning, no lowercase, no word-length limit, added tokens
not matched): each must differ from `tokenizers` on some sentence. It also times fromVocab and
the encoding of a 16-token and a 512-token text (printed and written to
test-artifacts/wordpiece.json, not asserted), and reads the vocabulary's size, raw and gzipped.

Without a browser, test_character_tables_are_tokenizers reads the script's character tables and
checks them against `tokenizers` at every range's ends and on 20,000 seeded code points, and
test_sentence_set_covers_what_the_issue_names checks the sentence file holds each kind of text.

The browser test needs Playwright and a Chromium executable (see test_browser.py); skipped
otherwise.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = "chapters/real-encoder/"
SCRIPT = "assets/javascripts/wordpiece.js"
EXPORTED_VOCAB = "assets/live/minilm/vocab.txt"  # written by the build (site_tools/live_hooks.py)
SENTENCES = Path(__file__).parent / "data" / "wordpiece_sentences.jsonl"
CHAPTER_SOURCES = [
    ROOT / "docs/chapters/real-encoder.md",
    ROOT / "docs-zh/chapters/real-encoder.md",
]
FUZZ_SEED, FUZZ_COUNT = 37, 300
SWEEP_EDGE = 256  # code points checked at each end of the planes not checked whole
SWEEP_CHUNK = 256  # code points a text (`tokenizers` is slower per character on longer texts)
TIMEOUT_MS = 60_000


def read_sentences(path: Path = SENTENCES) -> list[str]:
    """The committed test sentences: one JSON string per line, '#' lines name a group."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line and not line.startswith("#")]


def page_sentences() -> list[str]:
    """The example sentences of both editions of the chapter: its string literals and HTML
    attribute values that read as a sentence (a space or a CJK ideograph, ending in . ! ? or
    a Chinese full stop): the code's sentences and the widget's own examples."""
    found: list[str] = []
    for source in CHAPTER_SOURCES:
        text = source.read_text(encoding="utf-8")
        literals = re.findall(r'"((?:[^"\\\n]|\\.)*)"', text)  # "" too, so pairs stay in step
        literals += re.findall(r'\s[a-z-]+="([^"]*)"', text)  # attributes, wherever a pair began
        for literal in literals:
            if re.search(r"[ \u4e00-\u9fff]", literal) and re.search(r"[.!?。！？]$", literal):
                found.append(literal)
    return sorted(set(found))


# The pieces the seeded strings are built from: each kind of text the sentences hold.
FUZZ_POOLS = [
    ["the", "animal", "street", "tired", "tokenisation", "attention", "Hello", "WORLD", "x"],
    [*"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "\u2014", "\u2026", "\u00bf", "\u3002", "\uff0c"],
    ["caf\u00e9", "e\u0301", "\u00c5", "\u212b", "\u0130", "\u00df", "\u1e9e", "\ufb01", "\u03a3"],
    ["\u0301", "\u0308", "\u0323", "\u05b8", "\u064e", "\u093f", "\u0e31", "\u302a", "\u20e3"],
    ["0", "42", "3.14", "1,000", "\u0663", "\uff11", "\u00b2", "\u00bd", "\u2167"],
    [
        "\u6ce8\u610f\u529b",
        "\u4e2d",
        "\u9fff",
        "\U00020000",
        "\uf900",
        "\u3400",
        "\u304b",
        "\ud55c",
    ],
    ["\U0001f600", "\U0001f44d\U0001f3fd", "\u200d", "\ufe0f", "\U0001f1eb\U0001f1f7", "\u2764"],
    [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u000b", "\u0085"],
    ["\u0000", "\u0007", "\u007f", "\u00ad", "\u200b", "\ufeff", "\ufffd", "\ue000", "\u202e"],
    ["[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[mask]", "[MASK"],
    ["\u041c\u043e\u0441\u043a\u0432\u0430", "\u0634\u0643\u0631\u0627", "\u10d0", "\u13a0"],
]


def fuzz_sentences(seed: int = FUZZ_SEED, count: int = FUZZ_COUNT) -> list[str]:
    """``count`` strings of 1 to 40 pieces drawn from FUZZ_POOLS, joined with nothing or a
    space, with now and then a long run of one piece (words past the 100-character limit)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 40)):
            piece = rng.choice(rng.choice(FUZZ_POOLS))
            if rng.random() < 0.03:
                piece *= rng.randint(20, 120)
            pieces.append(piece + rng.choice(["", "", " "]))
        out.append("".join(pieces))
    return out


def sweep_ranges() -> list[tuple[int, int]]:
    """Planes 0-3 and 14 whole (the assigned ones), the ends of the others; no surrogates."""
    out = []
    for plane in range(17):
        lo, hi = plane << 16, (plane << 16) | 0xFFFF
        if plane == 0:
            out += [(lo, 0xD7FF), (0xE000, hi)]
        elif plane in (1, 2, 3, 14):
            out.append((lo, hi))
        else:
            out += [(lo, lo + SWEEP_EDGE - 1), (hi + 1 - SWEEP_EDGE, hi)]
    return out


def sweep_chunks(ranges: list[tuple[int, int]]) -> list[str]:
    """The sweep's texts: each code point c as the word "a" + c + "b" (so that what c does
    to a word shows: dropped, a space, a word of its own, a letter), SWEEP_CHUNK words a
    text, separated by spaces. The page builds the same texts from the same ranges."""
    words = ["a" + chr(c) + "b" for lo, hi in ranges for c in range(lo, hi + 1)]
    return [" ".join(words[i : i + SWEEP_CHUNK]) for i in range(0, len(words), SWEEP_CHUNK)]


@pytest.fixture(scope="module")
def tokenizer_json() -> dict:
    from attention_src.models.minilm import minilm_dir

    return json.loads((minilm_dir() / "tokenizer.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tokenizer():
    """`tokenizers`' own, from the model package's tokenizer.json, as MiniLMTokenizer sets it."""
    from tokenizers import Tokenizer

    from attention_src.models.minilm import minilm_dir

    tok = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


@pytest.fixture(scope="module")
def vocab_text(tokenizer_json) -> str:
    """vocab.txt from tokenizer.json: one token per line in id order, a final newline."""
    vocab = tokenizer_json["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    assert [vocab[t] for t in tokens] == list(range(len(tokens))), "ids are not 0..n-1"
    bad = [t for t in tokens if t != t.strip() or re.search(r"\s", t)]
    assert not bad, f"tokens a line-per-token file cannot hold: {bad[:5]}"
    return "\n".join(tokens) + "\n"


def test_sentence_set_covers_what_the_issue_names(tokenizer):
    """At least 200 committed sentences, with each kind of text the issue names."""
    sentences = read_sentences()
    assert len(sentences) >= 200, len(sentences)
    assert len(set(sentences)) == len(sentences), "duplicate sentences"
    text = "".join(sentences)
    kinds = {
        "punctuation": r"[!?,;:\"'()\[\]{}\u2014\u2026\u00bf\u300c]",
        "accents": r"[\u00e9\u00fc\u00f1\u0301\u0308]",
        "numbers": r"\d",
        "Chinese characters": r"[\u4e00-\u9fff]",
        "emoji": r"[\U0001f300-\U0001faff]",
        "tabs and newlines": r"[\t\n\r]",
        "control characters": r"[\u0000-\u0008\u007f-\u009f\u200b\ufeff]",
        "other scripts": r"[\u0400-\u04ff\u0590-\u05ff\u0600-\u06ff\uac00-\ud7af]",
    }
    missing = [kind for kind, pattern in kinds.items() if not re.search(pattern, text)]
    assert not missing, f"the sentences have no {missing}"
    unknown = [s for s in sentences if tokenizer.token_to_id("[UNK]") in tokenizer.encode(s).ids]
    assert len(unknown) >= 20, f"only {len(unknown)} sentences have an unknown word"
    longest = max(len(tokenizer.encode(s).ids) for s in sentences)
    assert longest > 512, f"the longest sentence has {longest} tokens"
    examples = page_sentences()
    assert len(examples) >= 10, examples
    # The page's examples as they were when the set was written are in it.
    assert "The animal didn't cross the street because it was too tired." in sentences


def _sweep_differences(tokenizer, chunks: list[str], got: list[str], n: int = 20) -> list[str]:
    """The code points whose word the page tokenizes differently, from the first texts that
    differ: the first differing token put back to its word by `tokenizers`' offsets."""
    out = []
    for text, page_ids in zip(chunks, got, strict=True):
        enc = tokenizer.encode(text, add_special_tokens=False)
        want = ",".join(map(str, enc.ids))
        if want == page_ids:
            continue
        page = [int(x) for x in page_ids.split(",") if x]
        pairs = zip(enc.ids, page, strict=False)  # the first difference, or where one ends
        i = next((k for k, (a, b) in enumerate(pairs) if a != b), min(len(page), len(enc.ids)))
        word = text.split(" ")[enc.offsets[min(i, len(enc.ids) - 1)][0] // 4]
        out.append(
            f"U+{ord(word[1]):04X} in {word!r}: tokenizers {enc.ids[i : i + 4]} "
            f"{enc.tokens[i : i + 4]}, page {page[i : i + 4]}"
        )
        if len(out) == n:
            break
    return out


def _text_for_tokens(tokenizer, n: int) -> str:
    """A text of exactly ``n`` tokens ([CLS] and [SEP] included), from the chapter's sentence:
    its words in turn while they fit (a word's tokens do not depend on its neighbours, the
    text splits at spaces first), then "a" (one token) up to ``n``."""
    words = "The animal didn't cross the street because it was too tired.".split()
    sizes = [len(tokenizer.encode(w, add_special_tokens=False).ids) for w in words]
    chosen, used = [], 2
    while used + sizes[len(chosen) % len(words)] <= n:
        used += sizes[len(chosen) % len(words)]
        chosen.append(words[len(chosen) % len(words)])
    text = " ".join(chosen + ["a"] * (n - used))
    assert len(tokenizer.encode(text).ids) == n
    return text


# Deliberately broken tokenizers (options the script takes): each must be caught.
MUTANTS = {
    "accents kept": {"stripAccents": False},
    "no Chinese spacing": {"handleChineseChars": False},
    "no cleaning": {"cleanText": False},
    "no lowercase": {"lowercase": False, "stripAccents": True},
    "no word-length limit": {"maxInputCharsPerWord": 1000},
    "added tokens not matched": {"addedTokens": []},
}

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
    return {tokens: e.tokens, ids: e.ids, unknown: e.unknown};
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


def _open_page(browser, site_url: str, problems: list[str]):
    """The chapter in a fresh context; requests to other hosts aborted and reported."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)

    def route(r):
        if r.request.url.startswith(site_url) or urlsplit(r.request.url).scheme == "data":
            r.continue_()
        else:
            problems.append(f"request to another host (aborted): {r.request.url}")
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"uncaught exception: {e}"))
    page.goto(site_url + PAGE)
    page.wait_for_load_state("load")
    if not page.evaluate("() => Boolean(window.AttentionWordPiece)"):
        # The chapter may load the tokenizer only when the reader asks; load it as it would.
        page.add_script_tag(url=site_url + SCRIPT)
    return context, page


def _first_differences(expected: list, got: list, labels: list, n: int = 8) -> list[str]:
    return [
        f"{label!r}:\n    tokenizers {e}\n    page       {g}"
        for label, e, g in zip(labels, expected, got, strict=True)
        if e != g
    ][:n]


def test_page_tokenizer_equals_tokenizers(
    browser, site_url, built_site, tokenizer, tokenizer_json, vocab_text, artifacts_dir
):
    sentences = read_sentences()
    sentences += [s for s in page_sentences() if s not in sentences]
    sentences += fuzz_sentences()
    ranges = sweep_ranges()
    chunks = sweep_chunks(ranges)
    timing = {"16 tokens": _text_for_tokens(tokenizer, 16)}
    timing["512 tokens"] = _text_for_tokens(tokenizer, 512)

    problems: list[str] = []
    started = time.perf_counter()
    context, page = _open_page(browser, site_url, problems)
    opened = time.perf_counter()
    try:
        args = {
            "vocab": vocab_text,
            "tokenizerJson": {k: v for k, v in tokenizer_json.items() if k != "model"}
            | {"model": {k: v for k, v in tokenizer_json["model"].items() if k != "vocab"}},
            "sentences": sentences,
            "sweep": ranges,
            "sweepChunk": SWEEP_CHUNK,
            "mutants": MUTANTS,
            "timing": timing,
        }
        out = json.loads(page.evaluate(EVALUATE_JS, json.dumps(args)))
        evaluated = time.perf_counter()
    finally:
        context.close()
    assert not problems, "\n".join(problems)

    # The options read off tokenizer.json are the script's defaults (what fromVocab(text) uses).
    assert out["options"] == out["defaults"], (out["options"], out["defaults"])
    assert out["vocabSize"] == tokenizer.get_vocab_size()

    expected = [tokenizer.encode(s) for s in sentences]
    want = [{"tokens": e.tokens, "ids": e.ids} for e in expected]
    got = [{"tokens": o["tokens"], "ids": o["ids"]} for o in out["encoded"]]
    wrong = _first_differences(want, got, sentences)
    n_wrong = sum(w != g for w, g in zip(want, got, strict=True))
    assert not wrong, f"{n_wrong} of {len(sentences)} texts differ:\n" + "\n".join(wrong)
    # `unknown` lists a word for each [UNK] that is not an [UNK] typed in the text.
    for s, o in zip(sentences, out["encoded"], strict=True):
        typed = s.count("[UNK]")
        assert len(o["unknown"]) == o["tokens"].count("[UNK]") - typed, (s, o["unknown"])

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

    raw = vocab_text.encode("utf-8")
    figures = {
        "texts": len(sentences),
        "code points swept": sum(hi + 1 - lo for lo, hi in ranges),
        "seconds: page open, evaluate, checks": [
            round(opened - started, 2),
            round(evaluated - opened, 2),
            round(time.perf_counter() - evaluated, 2),
        ],
        "sweep ms (page)": round(out["sweepMs"]),
        "broken tokenizers ms (page)": round(out["mutantsMs"]),
        "broken tokenizers caught (texts differing)": caught,
        "fromVocab ms": round(out["fromVocabMs"], 2),
        "encode ms (median of 5 x 200)": {k: round(v["ms"], 3) for k, v in out["timing"].items()},
        "tokens": {k: v["tokens"] for k, v in out["timing"].items()},
        "vocab.txt bytes": len(raw),
        "vocab.txt gzip -9 bytes": len(gzip.compress(raw, compresslevel=9, mtime=0)),
        "wordpiece.js bytes": (built_site.dir / SCRIPT).stat().st_size,
    }
    (artifacts_dir / "wordpiece.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


def test_exported_vocab_is_tokenizer_json_in_id_order(built_site, vocab_text):
    """The build's export (when this checkout has the hook that writes it) is the vocab.txt the
    test gives the page: the page reads what was tested."""
    if not (ROOT / "site_tools" / "live_hooks.py").exists():
        pytest.skip("no site_tools/live_hooks.py in this checkout: the build exports no vocab")
    exported = built_site.dir / EXPORTED_VOCAB
    assert exported.is_file(), f"the build wrote no {EXPORTED_VOCAB}"
    assert exported.read_text(encoding="utf-8") == vocab_text


def _js_tables() -> dict[str, list[tuple[int, int]]]:
    """wordpiece.js's character tables: {name: [(first, last), ...]}."""
    js = (ROOT / "docs" / SCRIPT).read_text(encoding="utf-8")
    tables = {}
    for name, body in re.findall(r"const ([A-Z_]+) = ranges\(((?:\s*\"[^\"]*\"\s*\+?)+)\s*\);", js):
        text = "".join(re.findall(r'"([^"]*)"', body))
        pairs = [part.split("-") for part in text.split(",")]
        tables[name] = [(int(p[0], 16), int(p[-1], 16)) for p in pairs]
    return tables


def test_character_tables_are_tokenizers(tokenizer):
    """No browser needed: wordpiece.js's tables predict what `tokenizers` does to a character,
    at both ends of every range, just outside them, and on 20,000 seeded code points."""
    import unicodedata

    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    tables = _js_tables()
    assert set(tables) == {"OTHER", "PUNCTUATION", "NONSPACING_MARK", "WHITESPACE", "CJK"}
    for name, ranges in tables.items():
        assert all(a <= b for a, b in ranges), name
        assert all(b < c for (_, b), (c, _) in itertools.pairwise(ranges)), f"{name} not sorted"

    def member(name: str, cp: int) -> bool:
        return any(a <= cp <= b for a, b in tables[name])

    def ascii_punct(cp: int) -> bool:
        return chr(cp) in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

    def off(**on) -> BertNormalizer:
        flags = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False)
        return BertNormalizer(**{**flags, "lowercase": False, **on})

    clean, chinese = off(clean_text=True), off(handle_chinese_chars=True)
    strip, pre = off(strip_accents=True), BertPreTokenizer()
    edges = {
        c + d for ranges in tables.values() for a, b in ranges for c in (a, b) for d in (-1, 0, 1)
    }
    rng = random.Random(FUZZ_SEED)
    cps = sorted(edges | {rng.randrange(0x110000) for _ in range(20_000)})
    wrong = []
    for cp in cps:
        if not 0 <= cp < 0x110000 or 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        dropped = cp in (0, 0xFFFD) or (member("OTHER", cp) and c not in "\t\n\r")
        spaced = not dropped and member("WHITESPACE", cp)
        want = "" if dropped else " " if spaced else c
        punct = not member("WHITESPACE", cp) and (ascii_punct(cp) or member("PUNCTUATION", cp))
        marks = all(member("NONSPACING_MARK", ord(d)) for d in unicodedata.normalize("NFD", c))
        checks = {
            "OTHER/WHITESPACE": (clean.normalize_str(c), want),
            "CJK": (chinese.normalize_str(c) == f" {c} ", member("CJK", cp)),
            "NONSPACING_MARK": (strip.normalize_str(c) == "", marks),
            "PUNCTUATION": (len(pre.pre_tokenize_str(f"a{c}a")) == 3, punct),
        }
        wrong += [
            f"U+{cp:04X} {name}: {got!r} != {exp!r}"
            for name, (got, exp) in checks.items()
            if got != exp
        ]
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:20])
