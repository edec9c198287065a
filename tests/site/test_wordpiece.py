"""MiniLM's tokenizer in the page (docs/assets/javascripts/wordpiece.js): the test set and
the checks that need no browser.

The equality with `tokenizers` in Chromium (every sentence of the test set, the sweep of code
points, six broken tokenizers caught) runs in the real-encoder chapter's one visit of the
browser pass: tests/browser/widget_wordpiece.py, which builds its inputs with this module's
helpers. Here, without a browser: test_character_tables_are_tokenizers reads the script's
character tables and checks them against `tokenizers` at every range's ends and on 20,000
seeded code points; test_sentence_set_covers_what_the_issue_names checks the sentence file
holds each kind of text; test_exported_vocab_is_tokenizer_json_in_id_order checks the build's
export is the vocabulary the page is tested with.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = "chapters/real-encoder/"
SCRIPT = "assets/javascripts/wordpiece.js"
# written by the build (site_tools/outputs/live_models.py)
EXPORTED_VOCAB = "assets/live/minilm/vocab.txt"
SENTENCES = Path(__file__).parent / "data" / "wordpiece_sentences.jsonl"
CHAPTER_SOURCES = [
    ROOT / "docs/chapters/real-encoder.md",
    ROOT / "docs-zh/chapters/real-encoder.md",
]
FUZZ_SEED, FUZZ_COUNT = 37, 300
SWEEP_EDGE = 256  # code points checked at each end of the planes not checked whole
SWEEP_CHUNK = 256  # code points a text (`tokenizers` is slower per character on longer texts)


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


@functools.cache
def load_tokenizer_json() -> dict:
    from attention_src.models.minilm import minilm_dir

    return json.loads((minilm_dir() / "tokenizer.json").read_text(encoding="utf-8"))


@functools.cache
def load_tokenizer():
    """`tokenizers`' own, from the model package's tokenizer.json, as MiniLMTokenizer sets it."""
    from tokenizers import Tokenizer

    from attention_src.models.minilm import minilm_dir

    tok = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


@functools.cache
def make_vocab_text() -> str:
    """vocab.txt from tokenizer.json: one token per line in id order, a final newline."""
    tokenizer_json = load_tokenizer_json()
    vocab = tokenizer_json["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    assert [vocab[t] for t in tokens] == list(range(len(tokens))), "ids are not 0..n-1"
    bad = [t for t in tokens if t != t.strip() or re.search(r"\s", t)]
    assert not bad, f"tokens a line-per-token file cannot hold: {bad[:5]}"
    return "\n".join(tokens) + "\n"


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture(scope="module")
def vocab_text() -> str:
    return make_vocab_text()


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


def test_exported_vocab_is_tokenizer_json_in_id_order(built_site, vocab_text):
    """The build's export (when this checkout has the module that writes it) is the vocab.txt the
    test gives the page: the page reads what was tested."""
    if not (ROOT / "site_tools" / "outputs" / "live_models.py").exists():
        pytest.skip("no site_tools/outputs/live_models.py here: the build exports no vocab")
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
