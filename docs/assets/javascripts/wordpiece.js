/*
 * wordpiece.js: MiniLM's tokenizer in the reader's browser, equal to `tokenizers`.
 *
 * all-MiniLM-L6-v2's tokenizer.json (in the model package) describes a BERT
 * uncased pipeline; this file runs the same steps, in the same order, as the
 * Rust library `tokenizers` (0.23) does with that file:
 *
 *   0. added tokens   [PAD] [UNK] [CLS] [SEP] [MASK] typed in the text are
 *                     matched first, on the raw text, case-sensitive, and
 *                     become those tokens (tokenizer.json: "normalized": false)
 *   1. BertNormalizer clean_text: drop NUL, U+FFFD and control characters
 *                     (Unicode "other": Cc, Cf, Co), every whitespace -> " ";
 *                     handle_chinese_chars: a space either side of each CJK
 *                     ideograph; strip_accents (null: follows lowercase): NFD,
 *                     then drop non-spacing marks (Mn); lowercase, code point
 *                     by code point
 *   2. BertPreTokenizer  split on whitespace (dropped) and around every
 *                     punctuation character (kept as a word of its own)
 *   3. WordPiece      each word: the longest vocabulary entry from its start,
 *                     then the longest "##"-prefixed entry from where that
 *                     ended, and so on; a word with no such split, or longer
 *                     than max_input_chars_per_word (100) characters, is [UNK]
 *   4. template       [CLS] words [SEP] (no truncation, no padding)
 *
 * Character classes come from tables below, not from the browser's \p{...}:
 * `tokenizers` takes "other", punctuation and non-spacing mark from the Rust
 * crate unicode_categories 0.1.1, whose tables are of an old Unicode (8.0, by
 * the characters they know: Unicode 8's U+1173C, not Unicode 9's U+2E43), while a
 * browser knows a newer one: Chromium 156's \p{P} holds 141 code points the
 * crate does not count as punctuation (and lacks 2 it does), its \p{Mn} 486
 * more marks. The tables were read off `tokenizers` itself, one code point
 * at a time; the tests check them again (tests/browser/widget_wordpiece.py: every
 * code point of planes 0-3 and 14 in Chromium; tests/site/test_wordpiece.py:
 * the tables' edges without it).
 * NFD and lowercase come from the browser (String.prototype.normalize and
 * toLowerCase), as `tokenizers` takes them from Rust's recent Unicode; the
 * test's sweep finds no difference there in Chromium.
 *
 * A classic script (no module syntax): it runs from file:// too and attaches
 * `window.AttentionWordPiece` (globalThis, so Node can load it as well):
 *
 *   const tok = AttentionWordPiece.fromVocab(vocabText, options);
 *   tok.encode("The animal didn't cross.")
 *     -> {tokens: ["[CLS]", "the", "animal", "didn", "'", "t", "cross", ".", "[SEP]"],
 *         ids: [101, 1996, 4111, 2134, 1005, 1056, 2892, 1012, 102],
 *         unknown: [],        // the words that became [UNK], as normalized
 *         unknownAt: []}      // where each of them is in tokens
 *
 * vocabText is BERT's vocab.txt: one token per line, id = line number from 0.
 * options (defaults = MiniLM's tokenizer.json): lowercase (true), stripAccents
 * (null: as lowercase), cleanText (true), handleChineseChars (true),
 * unkToken ("[UNK]"), continuingSubwordPrefix ("##"), maxInputCharsPerWord
 * (100), clsToken ("[CLS]"), sepToken ("[SEP]"), addedTokens (["[PAD]",
 * "[UNK]", "[CLS]", "[SEP]", "[MASK]"]).
 * AttentionWordPiece.optionsFromTokenizerJson(json) reads them off a parsed
 * tokenizer.json (and refuses a pipeline this file does not implement).
 *
 * A lone surrogate (a JavaScript string can hold one; Rust's cannot) is read
 * as U+FFFD, what it becomes in UTF-8 (TextEncoder), which clean_text drops.
 */
(function (root) {
  "use strict";

  // Sorted code point ranges "a-b,c,..." (hex) -> Uint32Array [a, b, c, c, ...].
  function ranges(text) {
    const parts = text.split(",");
    const out = new Uint32Array(parts.length * 2);
    parts.forEach((part, i) => {
      const [a, b] = part.split("-");
      out[2 * i] = parseInt(a, 16);
      out[2 * i + 1] = parseInt(b === undefined ? a : b, 16);
    });
    return out;
  }

  function inRanges(table, cp) {
    let lo = 0;
    let hi = table.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cp < table[2 * mid]) hi = mid - 1;
      else if (cp > table[2 * mid + 1]) lo = mid + 1;
      else return true;
    }
    return false;
  }

  // unicode_categories' is_other (Cc, Cf, Co, as of Unicode 8.0; no unassigned code points)
  const OTHER = ranges(
    "0-1f,7f-9f,ad,600-605,61c,6dd,70f,180e,200b-200f,202a-202e,2060-2064,2066-206f," +
    "e000-f8ff,feff,fff9-fffb,110bd,1bca0-1bca3,1d173-1d17a,e0001,e0020-e007f,f0000-ffffd," +
    "100000-10fffd"
  ); // 22 ranges, 137683 code points

  // its is_punctuation (Pc, Pd, Pe, Pf, Pi, Po, Ps, Unicode 8.0)
  const PUNCTUATION = ranges(
    "21-23,25-2a,2c-2f,3a-3b,3f-40,5b-5d,5f,7b,7d,a1,a7,ab,b6-b7,bb,bf,37e,387,55a-55f," +
    "589-58a,5be,5c0,5c3,5c6,5f3-5f4,609-60a,60c-60d,61b,61e-61f,66a-66d,6d4,700-70d," +
    "7f7-7f9,830-83e,85e,964-965,970,af0,df4,e4f,e5a-e5b,f04-f12,f14,f3a-f3d,f85,fd0-fd4," +
    "fd9-fda,104a-104f,10fb,1360-1368,1400,166d-166e,169b-169c,16eb-16ed,1735-1736," +
    "17d4-17d6,17d8-17da,1800-180a,1944-1945,1a1e-1a1f,1aa0-1aa6,1aa8-1aad,1b5a-1b60," +
    "1bfc-1bff,1c3b-1c3f,1c7e-1c7f,1cc0-1cc7,1cd3,2010-2027,2030-2043,2045-2051,2053-205e," +
    "207d-207e,208d-208e,2308-230b,2329-232a,2768-2775,27c5-27c6,27e6-27ef,2983-2998," +
    "29d8-29db,29fc-29fd,2cf9-2cfc,2cfe-2cff,2d70,2e00-2e2e,2e30-2e42,3001-3003,3008-3011," +
    "3014-301f,3030,303d,30a0,30fb,a4fe-a4ff,a60d-a60f,a673,a67e,a6f2-a6f7,a874-a877," +
    "a8ce-a8cf,a8f8-a8fa,a8fc,a92e-a92f,a95f,a9c1-a9cd,a9de-a9df,aa5c-aa5f,aade-aadf," +
    "aaf0-aaf1,abeb,fd3e-fd3f,fe10-fe19,fe30-fe52,fe54-fe61,fe63,fe68,fe6a-fe6b,ff01-ff03," +
    "ff05-ff0a,ff0c-ff0f,ff1a-ff1b,ff1f-ff20,ff3b-ff3d,ff3f,ff5b,ff5d,ff5f-ff65,10100-10102," +
    "1039f,103d0,1056f,10857,1091f,1093f,10a50-10a58,10a7f,10af0-10af6,10b39-10b3f," +
    "10b99-10b9c,11047-1104d,110bb-110bc,110be-110c1,11140-11143,11174-11175,111c5-111c9," +
    "111cd,111db,111dd-111df,11238-1123d,112a9,114c6,115c1-115d7,11641-11643,1173c-1173e," +
    "12470-12474,16a6e-16a6f,16af5,16b37-16b3b,16b44,1bc9f,1da87-1da8b"
  ); // 161 ranges, 717 code points

  // its is_mark_nonspacing (Mn, Unicode 8.0), as `tokenizers` meets it, after NFD:
  // it also lists the 18 characters that decompose into marks only (U+0340, ...)
  const NONSPACING_MARK = ranges(
    "300-36f,483-487,591-5bd,5bf,5c1-5c2,5c4-5c5,5c7,610-61a,64b-65f,670,6d6-6dc,6df-6e4," +
    "6e7-6e8,6ea-6ed,711,730-74a,7a6-7b0,7eb-7f3,816-819,81b-823,825-827,829-82d,859-85b," +
    "8e3-902,93a,93c,941-948,94d,951-957,962-963,981,9bc,9c1-9c4,9cd,9e2-9e3,a01-a02,a3c," +
    "a41-a42,a47-a48,a4b-a4d,a51,a70-a71,a75,a81-a82,abc,ac1-ac5,ac7-ac8,acd,ae2-ae3,b01," +
    "b3c,b3f,b41-b44,b4d,b56,b62-b63,b82,bc0,bcd,c00,c3e-c40,c46-c48,c4a-c4d,c55-c56," +
    "c62-c63,c81,cbc,cbf,cc6,ccc-ccd,ce2-ce3,d01,d41-d44,d4d,d62-d63,dca,dd2-dd4,dd6,e31," +
    "e34-e3a,e47-e4e,eb1,eb4-eb9,ebb-ebc,ec8-ecd,f18-f19,f35,f37,f39,f71-f7e,f80-f84," +
    "f86-f87,f8d-f97,f99-fbc,fc6,102d-1030,1032-1037,1039-103a,103d-103e,1058-1059," +
    "105e-1060,1071-1074,1082,1085-1086,108d,109d,135d-135f,1712-1714,1732-1734,1752-1753," +
    "1772-1773,17b4-17b5,17b7-17bd,17c6,17c9-17d3,17dd,180b-180d,18a9,1920-1922,1927-1928," +
    "1932,1939-193b,1a17-1a18,1a1b,1a56,1a58-1a5e,1a60,1a62,1a65-1a6c,1a73-1a7c,1a7f," +
    "1ab0-1abd,1b00-1b03,1b34,1b36-1b3a,1b3c,1b42,1b6b-1b73,1b80-1b81,1ba2-1ba5,1ba8-1ba9," +
    "1bab-1bad,1be6,1be8-1be9,1bed,1bef-1bf1,1c2c-1c33,1c36-1c37,1cd0-1cd2,1cd4-1ce0," +
    "1ce2-1ce8,1ced,1cf4,1cf8-1cf9,1dc0-1df5,1dfc-1dff,20d0-20dc,20e1,20e5-20f0,2cef-2cf1," +
    "2d7f,2de0-2dff,302a-302d,3099-309a,a66f,a674-a67d,a69e-a69f,a6f0-a6f1,a802,a806,a80b," +
    "a825-a826,a8c4,a8e0-a8f1,a926-a92d,a947-a951,a980-a982,a9b3,a9b6-a9b9,a9bc,a9e5," +
    "aa29-aa2e,aa31-aa32,aa35-aa36,aa43,aa4c,aa7c,aab0,aab2-aab4,aab7-aab8,aabe-aabf,aac1," +
    "aaec-aaed,aaf6,abe5,abe8,abed,fb1e,fe00-fe0f,fe20-fe2f,101fd,102e0,10376-1037a," +
    "10a01-10a03,10a05-10a06,10a0c-10a0f,10a38-10a3a,10a3f,10ae5-10ae6,11001,11038-11046," +
    "1107f-11081,110b3-110b6,110b9-110ba,11100-11102,11127-1112b,1112d-11134,11173," +
    "11180-11181,111b6-111be,111ca-111cc,1122f-11231,11234,11236-11237,112df,112e3-112ea," +
    "11300-11301,1133c,11340,11366-1136c,11370-11374,114b3-114b8,114ba,114bf-114c0," +
    "114c2-114c3,115b2-115b5,115bc-115bd,115bf-115c0,115dc-115dd,11633-1163a,1163d," +
    "1163f-11640,116ab,116ad,116b0-116b5,116b7,1171d-1171f,11722-11725,11727-1172b," +
    "16af0-16af4,16b30-16b36,16f8f-16f92,1bc9d-1bc9e,1d167-1d169,1d17b-1d182,1d185-1d18b," +
    "1d1aa-1d1ad,1d242-1d244,1da00-1da36,1da3b-1da6c,1da75,1da84,1da9b-1da9f,1daa1-1daaf," +
    "1e8d0-1e8d6,e0100-e01ef"
  ); // 266 ranges, 1567 code points

  // Rust's char::is_whitespace (the Unicode White_Space property)
  const WHITESPACE = ranges("9-d,20,85,a0,1680,2000-200a,2028-2029,202f,205f,3000");

  // tokenizers' is_chinese_char: the CJK Unified Ideographs blocks and their
  // extensions A-F, the compatibility ideographs and their supplement
  const CJK = ranges(
    "3400-4dbf,4e00-9fff,f900-faff,20000-2a6df,2a700-2b73f,2b740-2b81f," +
      "2b920-2ceaf,2f800-2fa1f"
  );

  function isWhitespace(cp) {
    return inRanges(WHITESPACE, cp);
  }

  // clean_text's test: "other" except tab, newline and carriage return, which
  // count as whitespace
  function isControl(cp) {
    return cp !== 0x09 && cp !== 0x0a && cp !== 0x0d && inRanges(OTHER, cp);
  }

  // BertPreTokenizer's test: ASCII punctuation (which includes symbols such
  // as $ + < = > ^ ` | ~) or a Unicode punctuation category
  function isPunctuation(cp) {
    if (cp < 0x80) {
      return (
        (cp >= 0x21 && cp <= 0x2f) ||
        (cp >= 0x3a && cp <= 0x40) ||
        (cp >= 0x5b && cp <= 0x60) ||
        (cp >= 0x7b && cp <= 0x7e)
      );
    }
    return inRanges(PUNCTUATION, cp);
  }

  function isChineseChar(cp) {
    return inRanges(CJK, cp);
  }

  function isNonspacingMark(cp) {
    return inRanges(NONSPACING_MARK, cp);
  }

  // Code points -> a string, in slices (one spread of a long text would overflow the stack).
  function fromCodePoints(cps) {
    let text = "";
    for (let i = 0; i < cps.length; i += 4096) {
      text += String.fromCodePoint(...cps.slice(i, i + 4096));
    }
    return text;
  }

  // A string -> its code points, a lone surrogate read as U+FFFD (as UTF-8 would).
  function codePoints(text) {
    const out = [];
    for (const ch of text) {
      const cp = ch.codePointAt(0);
      out.push(cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
    }
    return out;
  }

  const DEFAULTS = Object.freeze({
    lowercase: true,
    stripAccents: null, // null: strip accents when lowercasing, as BERT uncased
    cleanText: true,
    handleChineseChars: true,
    unkToken: "[UNK]",
    continuingSubwordPrefix: "##",
    maxInputCharsPerWord: 100,
    clsToken: "[CLS]",
    sepToken: "[SEP]",
    addedTokens: Object.freeze(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]),
  });

  // Step 1, BertNormalizer: code points in, code points out.
  function normalize(cps, o) {
    if (o.cleanText) {
      const kept = [];
      for (const cp of cps) {
        if (cp === 0 || cp === 0xfffd || isControl(cp)) continue;
        kept.push(isWhitespace(cp) ? 0x20 : cp);
      }
      cps = kept;
    }
    if (o.handleChineseChars) {
      const spaced = [];
      for (const cp of cps) {
        if (isChineseChar(cp)) spaced.push(0x20, cp, 0x20);
        else spaced.push(cp);
      }
      cps = spaced;
    }
    const stripAccents = o.stripAccents === null ? o.lowercase : o.stripAccents;
    if (stripAccents) {
      const text = fromCodePoints(cps);
      cps = codePoints(text.normalize("NFD")).filter((cp) => !isNonspacingMark(cp));
    }
    if (o.lowercase) {
      const lower = [];
      for (const cp of cps) {
        // one code point at a time, as Rust's char::to_lowercase: no final-sigma rule
        for (const ch of String.fromCodePoint(cp).toLowerCase()) lower.push(ch.codePointAt(0));
      }
      cps = lower;
    }
    return cps;
  }

  // Step 2, BertPreTokenizer: code points -> words (strings).
  function preTokenize(cps) {
    const words = [];
    let word = [];
    const flush = () => {
      if (word.length) words.push(fromCodePoints(word));
      word = [];
    };
    for (const cp of cps) {
      if (isWhitespace(cp)) {
        flush();
      } else if (isPunctuation(cp)) {
        flush();
        words.push(String.fromCodePoint(cp));
      } else {
        word.push(cp);
      }
    }
    flush();
    return words;
  }

  // Step 0: the text split around the added tokens typed in it, leftmost
  // first, the longest when two start at the same place ->
  // [{text} | {token}, ...].
  function splitAddedTokens(text, added) {
    const pieces = [];
    let start = 0;
    let i = 0;
    while (i < text.length) {
      let match = null;
      for (const token of added) {
        if (text.startsWith(token, i) && (match === null || token.length > match.length)) {
          match = token;
        }
      }
      if (match === null) {
        i += 1;
        continue;
      }
      if (i > start) pieces.push({ text: text.slice(start, i) });
      pieces.push({ token: match });
      i += match.length;
      start = i;
    }
    if (start < text.length) pieces.push({ text: text.slice(start) });
    return pieces;
  }

  function parseVocab(vocabText) {
    if (typeof vocabText !== "string") {
      throw new TypeError(`vocabText must be a string (vocab.txt's text), got ${typeof vocabText}`);
    }
    const lines = vocabText.split("\n");
    if (lines[lines.length - 1] === "") lines.pop(); // the file's final newline
    const vocab = new Map();
    lines.forEach((line, id) => {
      const token = line.endsWith("\r") ? line.slice(0, -1) : line;
      if (token === "") throw new Error(`vocab.txt: line ${id + 1} is empty`);
      if (vocab.has(token)) {
        throw new Error(
          `vocab.txt: token ${JSON.stringify(token)} on line ${id + 1} ` +
            `is already on line ${vocab.get(token) + 1}`
        );
      }
      vocab.set(token, id);
    });
    return vocab;
  }

  function fromVocab(vocabText, options) {
    const unknownOptions = Object.keys(options || {}).filter((k) => !(k in DEFAULTS));
    if (unknownOptions.length) {
      throw new TypeError(
        `unknown option(s) ${unknownOptions.join(", ")}; the options are ` +
          Object.keys(DEFAULTS).join(", ")
      );
    }
    const o = Object.assign({}, DEFAULTS, options || {});
    if (!Number.isInteger(o.maxInputCharsPerWord) || o.maxInputCharsPerWord < 1) {
      throw new TypeError(
        `maxInputCharsPerWord must be a positive integer, got ${o.maxInputCharsPerWord}`
      );
    }
    const vocab = parseVocab(vocabText);
    for (const name of ["unkToken", "clsToken", "sepToken"]) {
      if (!vocab.has(o[name])) {
        throw new Error(`the vocabulary has no ${name} ${JSON.stringify(o[name])}`);
      }
    }
    for (const token of o.addedTokens) {
      if (!vocab.has(token)) {
        throw new Error(`the vocabulary has no added token ${JSON.stringify(token)}`);
      }
    }
    const prefix = o.continuingSubwordPrefix;
    const maxChars = o.maxInputCharsPerWord;

    // No vocabulary entry is longer than this (in code points): a longer piece cannot match.
    let longest = 0;
    for (const token of vocab.keys()) longest = Math.max(longest, Array.from(token).length);

    // Step 3, WordPiece: one word -> its tokens (greedy, longest match first). `tokenizers`
    // tries every end from the word's last character down; starting at `longest` characters
    // instead skips only pieces no entry can match, and keeps a long word's cost linear.
    function wordPiece(word) {
      if (word.length > 2 * maxChars) return null; // over maxChars code points, surely
      const chars = Array.from(word);
      if (chars.length > maxChars) return null;
      const at = [0]; // at[i]: where character i starts in the string (UTF-16 units)
      for (const ch of chars) at.push(at[at.length - 1] + ch.length);
      const pieces = [];
      let start = 0;
      while (start < chars.length) {
        let end = Math.min(chars.length, start + longest);
        let found = null;
        while (start < end) {
          const sub = (start > 0 ? prefix : "") + word.slice(at[start], at[end]);
          if (vocab.has(sub)) {
            found = sub;
            break;
          }
          end -= 1;
        }
        if (found === null) return null; // no split: the whole word is unknown
        pieces.push(found);
        start = end;
      }
      return pieces;
    }

    function encode(text) {
      if (typeof text !== "string") {
        throw new TypeError(`text must be a string, got ${typeof text}`);
      }
      const tokens = [o.clsToken];
      const unknown = [];
      const unknownAt = [];
      for (const piece of splitAddedTokens(text, o.addedTokens)) {
        if (piece.token !== undefined) {
          tokens.push(piece.token);
          continue;
        }
        for (const word of preTokenize(normalize(codePoints(piece.text), o))) {
          const pieces = wordPiece(word);
          if (pieces === null) {
            unknownAt.push(tokens.length);
            tokens.push(o.unkToken);
            unknown.push(word);
          } else {
            tokens.push(...pieces);
          }
        }
      }
      tokens.push(o.sepToken);
      return { tokens, ids: tokens.map((t) => vocab.get(t)), unknown, unknownAt };
    }

    return { encode, vocabSize: vocab.size, options: o };
  }

  // The post-processor's single-sentence template -> [its first token, its last]: it must be
  // TemplateProcessing's [special, sequence A, special] or BertProcessing's [cls, A, sep].
  function templateTokens(post) {
    if (post && post.type === "BertProcessing") return [post.cls[0], post.sep[0]];
    const single = (post && post.type === "TemplateProcessing" && post.single) || [];
    const shape = single.map((piece) => Object.keys(piece)[0]).join(" ");
    if (shape !== "SpecialToken Sequence SpecialToken") {
      throw new Error(
        "tokenizer.json: only a [CLS] sequence [SEP] template is implemented, got " +
          JSON.stringify(single)
      );
    }
    return [single[0].SpecialToken.id, single[2].SpecialToken.id];
  }

  // MiniLM's tokenizer.json (parsed) -> fromVocab's options; refuses a
  // pipeline other than the one this file implements.
  function optionsFromTokenizerJson(json) {
    const n = json.normalizer || {};
    const m = json.model || {};
    if (n.type !== "BertNormalizer") {
      throw new Error(`tokenizer.json: normalizer ${n.type}, only BertNormalizer is implemented`);
    }
    if ((json.pre_tokenizer || {}).type !== "BertPreTokenizer") {
      throw new Error("tokenizer.json: only the BertPreTokenizer is implemented");
    }
    if (m.type !== "WordPiece") {
      throw new Error(`tokenizer.json: model ${m.type}, only WordPiece is implemented`);
    }
    const [clsToken, sepToken] = templateTokens(json.post_processor);
    const added = (json.added_tokens || []).map((t) => {
      if (t.normalized || t.lstrip || t.rstrip || t.single_word) {
        throw new Error(`tokenizer.json: added token ${t.content} is matched in a way not implemented`);
      }
      return t.content;
    });
    return {
      lowercase: n.lowercase,
      stripAccents: n.strip_accents === undefined ? null : n.strip_accents,
      cleanText: n.clean_text,
      handleChineseChars: n.handle_chinese_chars,
      unkToken: m.unk_token,
      continuingSubwordPrefix: m.continuing_subword_prefix,
      maxInputCharsPerWord: m.max_input_chars_per_word,
      clsToken,
      sepToken,
      addedTokens: added,
    };
  }

  root.AttentionWordPiece = {
    fromVocab,
    optionsFromTokenizerJson,
    DEFAULTS,
    // the steps, for tests and for a reader who wants to see one at a time
    normalize: (text, options) =>
      fromCodePoints(normalize(codePoints(text), Object.assign({}, DEFAULTS, options))),
    preTokenize: (normalized) => preTokenize(codePoints(normalized)),
  };
})(typeof window !== "undefined" ? window : globalThis);
