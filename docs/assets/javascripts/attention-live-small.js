/*
 * attention-live-small.js: the site's small trained models on the reader's own
 * sequence, in the page. Chapter 12's causal copy model (CausalLM,
 * attention_src/decoder.py) and chapter 14's encoder–decoder (EncoderDecoder,
 * attention_src/encoder_decoder.py), written with the ops of attention-live.js
 * (window.AttentionLive.ops: the same steps and names as the lesson modules;
 * its header states the layout: row-major [L, D], weights [out, in]).
 *
 * A classic script, loaded by the two chapter pages only (their widget's
 * placeholder, printed by site_tools/outputs/live_small.py's widget_html, brings the
 * <script> tag). The weights are fetched when the reader presses the button,
 * never before: assets/live/small/<name>.json (settings, shapes) and the
 * float32 weights it names (site_tools/outputs/live_small.py writes both at build time
 * from the build's own trained results).
 *
 * window.AttentionLive.small = {load, causalLM, generate, encoderDecoder,
 * parseSymbols, lengthError}: the tests call them on many inputs at once.
 */
(function () {
  "use strict";

  const live = (window.AttentionLive = window.AttentionLive || {});
  const ops = () => {
    if (!live.ops) throw new Error("attention-live.js did not load: the ops are missing");
    return live.ops;
  };
  const SCRIPT_URL = document.currentScript ? document.currentScript.src : document.baseURI;

  // ---- loading: the JSON, then its weights, with progress -------------------

  class LoadError extends Error {
    constructor(why, url) {
      super(why);
      this.url = url;
    }
  }

  async function fetchChecked(url) {
    let response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw new LoadError(e.message, url); // file:// and network failures land here
    }
    if (!response.ok) throw new LoadError(response.status + " " + response.statusText, url);
    return response;
  }

  /** The bytes at `url`, calling onProgress(bytes so far) as they arrive. */
  async function fetchBytes(url, total, onProgress) {
    const response = await fetchChecked(url);
    if (!response.body || !response.body.getReader) return response.arrayBuffer();
    const reader = response.body.getReader();
    const out = new Uint8Array(total);
    let got = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (got + value.length > total) throw new LoadError("more than the " + total + " bytes expected", url);
      out.set(value, got);
      got += value.length;
      onProgress(got);
    }
    if (got !== total) throw new LoadError("got " + got + " of " + total + " bytes", url);
    return out.buffer;
  }

  /**
   * The model `name`: {manifest, config, params}, params[name] a tensor per entry of
   * the state_dict (a shared table under both names). onProgress(bytes, total) counts
   * both files, the JSON and the weights: the bytes the widget's button names
   * (data-bytes, site_tools/outputs/live_small.py's export_size).
   */
  async function load(name, onProgress) {
    const { tensor } = ops();
    const url = new URL("../live/small/" + name + ".json", SCRIPT_URL);
    const text = new Uint8Array(await (await fetchChecked(url)).arrayBuffer());
    const manifest = JSON.parse(new TextDecoder().decode(text));
    if (manifest.format !== 1) throw new LoadError("unknown format " + manifest.format, url.href);
    const head = text.length; // the JSON's bytes, then the weights'
    const total = head + manifest.weights_bytes;
    const progress = onProgress || (() => {});
    progress(head, total);
    const buffer = await fetchBytes(new URL(manifest.weights, url), manifest.weights_bytes,
      (got) => progress(head + got, total));
    const params = {};
    for (const [key, t] of Object.entries(manifest.tensors)) {
      if (t.same_as) continue;
      const n = t.shape.reduce((a, b) => a * b, 1);
      params[key] = tensor(new Float32Array(buffer, 4 * t.offset, n), t.shape);
    }
    for (const [key, t] of Object.entries(manifest.tensors)) if (t.same_as) params[key] = params[t.same_as];
    progress(total, total);
    return { manifest: manifest, config: manifest.config, params: params };
  }

  // ---- the lesson modules' pieces, by their state_dict names ----------------

  const linearAt = (P, name) => ({ weight: P[name + ".weight"], bias: P[name + ".bias"] });
  const attentionAt = (P, name) => ({
    q_proj: linearAt(P, name + ".q_proj"), k_proj: linearAt(P, name + ".k_proj"),
    v_proj: linearAt(P, name + ".v_proj"), out_proj: linearAt(P, name + ".out_proj"),
  });
  const ffAt = (P, name) => ({ linear1: linearAt(P, name + ".linear1"), linear2: linearAt(P, name + ".linear2") });

  function layerNormAt(P, name, x, eps) {
    return ops().layerNorm(x, P[name + ".weight"], P[name + ".bias"], eps);
  }

  function argmaxRows(logits) {
    const [L, V] = logits.shape;
    const out = [];
    for (let i = 0; i < L; i++) {
      let best = 0;
      for (let v = 1; v < V; v++) if (logits.data[i * V + v] > logits.data[i * V + best]) best = v;
      out.push(best); // the first of equal maxima, as torch.argmax
    }
    return out;
  }

  /** The lesson's message for too many tokens (attention_src/validate.py, check_token_ids). */
  function lengthError(name, length, maxLen) {
    return name + " has length " + length + ", but the position table covers only max_len=" + maxLen
      + " positions (" + name + " shape (1, " + length + "))";
  }

  // ---- chapter 12: CausalLM.forward -----------------------------------------

  /** CausalBlock.forward (pre-norm): x + self_attn(norm1(x)), then x + ff(norm2(x)). */
  function causalBlock(P, i, x, mask, c) {
    const { add, multiHeadAttention, feedForward } = ops();
    const p = "blocks." + i + ".";
    const a = multiHeadAttention(layerNormAt(P, p + "norm1", x, c.eps), attentionAt(P, p + "self_attn"), c.num_heads, mask);
    x = add(x, a.output); // [L, D]; weights: [H, L, L]
    x = add(x, feedForward(layerNormAt(P, p + "norm2", x, c.eps), ffAt(P, p + "ff"), c.activation));
    return { output: x, weights: a.weights };
  }

  /** CausalLM.forward: ids -> {logits [L, V], weights: one [H, L, L] per layer}. */
  function causalLM(model, tokens) {
    const { add, embedding, linear, causalMask } = ops();
    const P = model.params;
    const c = model.config;
    if (tokens.length > c.max_len) throw new RangeError(lengthError("tokens", tokens.length, c.max_len));
    const L = tokens.length;
    const positions = tokens.map((_, t) => t); // 0 .. L - 1
    let x = add(embedding(P["token_embedding.weight"], tokens), embedding(P["position_embedding.weight"], positions));
    // decided here, once for every block: query i may see keys 0 .. i
    const mask = c.causal ? causalMask(L) : null;
    const weights = [];
    for (let i = 0; i < c.num_layers; i++) {
      const r = causalBlock(P, i, x, mask, c);
      x = r.output;
      weights.push(r.weights);
    }
    const logits = linear(layerNormAt(P, "final_norm", x, c.eps), P["head.weight"], P["head.bias"]); // [L, V]
    return { logits: logits, predictions: argmaxRows(logits), weights: weights };
  }

  /** CausalLM.generate: append the last position's argmax, run the whole sequence again. */
  function generate(model, prompt, maxNewTokens) {
    const tokens = prompt.slice();
    for (let n = 0; n < maxNewTokens; n++) {
      const r = causalLM(model, tokens);
      tokens.push(r.predictions[tokens.length - 1]); // the last position's prediction
    }
    return tokens;
  }

  // ---- chapter 14: EncoderDecoder ---------------------------------------------

  /** Embedding scaled by sqrt(D), plus the sinusoidal positions (Encoder, EncoderDecoder.decode). */
  function embedWithPositions(table, ids, D) {
    const { add, embedding, sinusoidalPositionalEncoding } = ops();
    const x = embedding(table, ids);
    const scale = Math.fround(Math.sqrt(D));
    for (let i = 0; i < x.data.length; i++) x.data[i] *= scale;
    return add(x, sinusoidalPositionalEncoding(ids.length, D)); // [L, D]
  }

  /** EncoderDecoder.encode: the memory [S, D] and the encoder's weights, one [H, S, S] per layer. */
  function encode(model, source) {
    const { encoderLayer } = ops();
    const P = model.params;
    const c = model.config;
    let x = embedWithPositions(P["encoder.embedding.weight"], source, c.d_model);
    const weights = [];
    for (let i = 0; i < c.num_layers; i++) {
      const p = "encoder.layers." + i + ".";
      const layer = { self_attn: attentionAt(P, p + "self_attn"), ff: ffAt(P, p + "ff"), norm1: linearAt(P, p + "norm1"), norm2: linearAt(P, p + "norm2") };
      const r = encoderLayer(x, layer, { numHeads: c.num_heads, activation: c.activation, normFirst: c.norm_first, eps: c.eps });
      x = r.output;
      weights.push(r.weights);
    }
    if (c.norm_first) x = layerNormAt(P, "encoder.final_norm", x, c.eps);
    return { memory: x, weights: weights };
  }

  /** DecoderLayer.forward: masked self-attention, cross-attention to the memory, feed-forward. */
  function decoderLayer(P, i, x, memory, selfMask, c) {
    const { add, multiHeadAttention, feedForward } = ops();
    const p = "layers." + i + ".";
    const norm = (k, t) => layerNormAt(P, p + "norm" + k, t, c.eps);
    const selfAttn = attentionAt(P, p + "self_attn");
    const crossAttn = attentionAt(P, p + "cross_attn");
    const ff = ffAt(P, p + "ff");
    let a, crossed;
    if (c.norm_first) {
      a = multiHeadAttention(norm(1, x), selfAttn, c.num_heads, selfMask);
      x = add(x, a.output); // [L, D]
      // queries from the target, keys and values from the memory
      crossed = multiHeadAttention(norm(2, x), crossAttn, c.num_heads, null, memory);
      x = add(x, crossed.output);
      x = add(x, feedForward(norm(3, x), ff, c.activation));
    } else {
      a = multiHeadAttention(x, selfAttn, c.num_heads, selfMask);
      x = norm(1, add(x, a.output));
      crossed = multiHeadAttention(x, crossAttn, c.num_heads, null, memory);
      x = norm(2, add(x, crossed.output));
      x = norm(3, add(x, feedForward(x, ff, c.activation)));
    }
    return { output: x, selfWeights: a.weights, crossWeights: crossed.weights }; // [H, L, L], [H, L, S]
  }

  /** EncoderDecoder.decode: logits [L, V] and every layer's self and cross weights. */
  function decode(model, decoderInput, memory) {
    const { causalMask, linear } = ops();
    const P = model.params;
    const c = model.config;
    let y = embedWithPositions(P["target_embedding.weight"], decoderInput, c.d_model);
    const selfMask = causalMask(decoderInput.length); // the past only
    const selfWeights = [];
    const crossWeights = [];
    for (let i = 0; i < c.num_layers; i++) {
      const r = decoderLayer(P, i, y, memory, selfMask, c);
      y = r.output;
      selfWeights.push(r.selfWeights);
      crossWeights.push(r.crossWeights);
    }
    if (c.norm_first) y = layerNormAt(P, "final_norm", y, c.eps);
    return { logits: linear(y, P["out.weight"], P["out.bias"]), selfWeights: selfWeights, crossWeights: crossWeights };
  }

  /**
   * EncoderDecoder.generate: greedy from BOS, S steps, the memory computed once ->
   * {written, encoderWeights, selfWeights, crossWeights} (the weights of the last
   * step, whose rows are every step's).
   */
  function encoderDecoder(model, source) {
    const c = model.config;
    if (source.length > c.max_len) throw new RangeError(lengthError("source", source.length, c.max_len));
    const enc = encode(model, source);
    const written = [c.bos];
    let last = null;
    for (let t = 0; t < source.length; t++) {
      last = decode(model, written, enc.memory);
      const V = last.logits.shape[1];
      const row = last.logits.data.subarray((written.length - 1) * V, written.length * V);
      let best = 0;
      for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
      written.push(best);
    }
    return {
      written: written.slice(1), encoderWeights: enc.weights,
      selfWeights: last.selfWeights, crossWeights: last.crossWeights,
    };
  }

  // ---- the reader's text -> symbols ------------------------------------------

  /**
   * Symbols from the box: numbers separated by spaces or commas ("3 1 4"); when every
   * symbol is one digit, a run of digits too ("314"). -> {ids} or {bad: [the words
   * that are not symbols]}.
   */
  function parseSymbols(text, symbols) {
    const allowed = new Set(symbols.map(String));
    let words = text.trim().split(/[\s,;]+/u).filter((w) => w !== "");
    const oneDigit = symbols.every((s) => s >= 0 && s <= 9);
    if (oneDigit && words.length === 1 && /^\d+$/.test(words[0])) words = [...words[0]];
    const bad = words.filter((w) => !allowed.has(w.replace(/^0+(?=\d)/, "")));
    if (bad.length) return { bad: [...new Set(bad)] };
    return { ids: words.map(Number) };
  }

  live.small = {
    load: load, causalLM: causalLM, generate: generate, encode: encode, decode: decode,
    encoderDecoder: encoderDecoder, parseSymbols: parseSymbols, lengthError: lengthError, LoadError: LoadError,
  };

  // ==== the widget ===========================================================

  const ZH = (document.documentElement.lang || "").slice(0, 2) === "zh";
  // kB: 1000 bytes (the SI prefix; KiB would be 1024), in the button and the progress alike
  const KB = (bytes) => (bytes / 1000).toFixed(1) + " kB";
  const symbolRange = (s) => s[0] + "–" + s[s.length - 1];
  const T = ZH ? {
    box: {
      "causal-lm": (s, max) => "你的序列：" + symbolRange(s) + " 之间的数字，最多 " + max + " 个",
      "encoder-decoder": (s, max, trained) => "你的源序列：" + symbolRange(s) + " 之间的符号，用空格隔开，最多 " + max + " 个"
        + (trained ? "（训练长度为 " + trained.replace("-", " 到 ") + "）" : ""),
    },
    load: (b) => "加载模型（" + KB(b) + "）并运行", run: "运行",
    example: (i) => "示例 " + (i + 1),
    examples: "本页的示例",
    loading: (got, total) => "正在加载权重：" + KB(got) + " / " + KB(total),
    empty: "请先输入一个序列。",
    refused: "模型拒绝了这个输入，报错与课程代码相同：",
    bad: (words, s) => "这些不是本任务的符号：" + words.join(" ") + "。只能用 " + symbolRange(s) + " 之间的整数。",
    bos: "（0 是起始符 BOS，不是符号）",
    loadFailed: (why, url) => "模型文件加载失败（" + why + "，" + url + "）。请再按一次按钮重试。",
    fileUrl: "这个页面是从 file:// 打开的：Chromium 不允许页面从 file:// 读取文件（fetch），所以这里加载不了模型。请通过 http:// 打开本站，例如在站点目录中运行 python -m http.server。",
    doneCausal: (layers, heads, L, ms) => "已在 " + L + " 个词元上算完 " + layers + " 层 × " + heads + " 个头，用时 " + ms + " 毫秒。",
    doneSeq: (S, wrong, ms) => "已抄写 " + S + " 个符号，用时 " + ms + " 毫秒：" + (wrong === 0 ? "全部正确。" : "错了 " + wrong + " 个（下面标了 ✗）。"),
    predicted: "每个位置预测的下一个词元（位置 t 读了词元 0..t）",
    written: (max, n) => "贪心续写到 " + max + " 个词元：模型写了 " + n + " 个",
    nothingWritten: (max) => "序列已满 " + max + " 个词元，没有位置可以续写。",
    source: "源序列", output: "模型写出的", wrongAt: (list) => "写错的位置：" + list,
    input: "输入", next: "预测",
    maps: "每一层每一个头的注意力（行：查询，列：键；颜色越深权重越大；斜线：被掩码挡住；把鼠标移到格子上，或聚焦一张图后用方向键，可读出权重）",
    encoderMaps: "编码器自注意力（S × S；把鼠标移到格子上，或聚焦一张图后用方向键，可读出权重）", selfMaps: "解码器的掩码自注意力（L × L）", crossMaps: "交叉注意力（L 行输出 × S 列输入）",
    head: (l, h) => "第 " + l + " 层第 " + h + " 头",
    mapLabel: (title, rows) => title + "。每一行权重最大的键：" + rows,
    readout: (q, k, w) => "查询 " + q + " → 键 " + k + "：" + w,
    titled: (title) => title + "：",
  } : {
    box: {
      "causal-lm": (s, max) => "Your sequence: digits " + symbolRange(s) + ", at most " + max,
      "encoder-decoder": (s, max, trained) => "Your source: symbols " + symbolRange(s) + " separated by spaces, at most " + max
        + (trained ? " (trained on lengths " + trained.replace("-", " to ") + ")" : ""),
    },
    load: (b) => "Load the model (" + KB(b) + ") and run", run: "Run",
    example: (i) => "Example " + (i + 1),
    examples: "The page's examples",
    loading: (got, total) => "Loading the weights: " + KB(got) + " of " + KB(total),
    empty: "Type a sequence first.",
    refused: "The model refuses it, with the lesson's own message: ",
    bad: (words, s) => "Not symbols of this task: " + words.join(" ") + ". Use whole numbers from " + symbolRange(s) + ".",
    bos: " (0 is BOS, the start token, not a symbol)",
    loadFailed: (why, url) => "The model file failed to load (" + why + ", " + url + "). Press the button to try again.",
    fileUrl: "This page was opened from file://: Chromium does not let a page fetch files from file://, so the model cannot load here. Open the site over http://, e.g. run python -m http.server in the site's folder.",
    doneCausal: (layers, heads, L, ms) => "Computed " + layers + " layers × " + heads + " heads on " + L + " tokens in " + ms + " ms.",
    doneSeq: (S, wrong, ms) => "Copied " + S + " symbols in " + ms + " ms: " + (wrong === 0 ? "all right." : wrong + " wrong (marked ✗ below)."),
    predicted: "The next token predicted at each position (position t has read tokens 0..t)",
    written: (max, n) => "Greedy continuation to " + max + " tokens: the model wrote " + n,
    nothingWritten: (max) => "The sequence already fills the " + max + " positions: nothing left to write.",
    source: "source", output: "written", wrongAt: (list) => "wrong at positions: " + list,
    input: "input", next: "predicts",
    maps: "Every layer's and head's attention (rows: queries, columns: keys; darker = more weight; hatched: hidden by the mask; hover a cell, or focus a map and use the arrow keys, to read its weight)",
    encoderMaps: "Encoder self-attention (S × S; hover a cell, or focus a map and use the arrow keys, to read its weight)", selfMaps: "Decoder masked self-attention (L × L)", crossMaps: "Cross-attention (L output rows × S input columns)",
    head: (l, h) => "layer " + l + ", head " + h,
    mapLabel: (title, rows) => title + ". The key with most weight in each row: " + rows,
    readout: (q, k, w) => "query " + q + " → key " + k + ": " + w,
    titled: (title) => title + ": ",
  };

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /**
   * A row-by-row table: [[header, cells, wrongFlags?], ...], every row as long. Where the
   * widget is too narrow for all its columns (a phone), the columns are cut into bands,
   * one under the other, each with the row headers again: nothing hides to the right.
   * fitTable() cuts it for the width it has; the widget calls it again when that changes.
   */
  function table(rows, name) {
    const wrap = el("div", { class: "ls-table" });
    wrap.lsRows = rows;
    wrap.lsName = name;
    bandTable(wrap, rows[0][1].length);
    return wrap;
  }

  /** The table in bands of `per` columns (tbodies of one table: the columns line up). */
  function bandTable(wrap, per) {
    const rows = wrap.lsRows;
    const n = rows[0][1].length;
    // a class: none of the theme's own table styles
    const t = el("table", { class: "ls-grid", "aria-label": wrap.lsName });
    for (let start = 0; start < n; start += per) {
      const band = el("tbody");
      for (const [head, cells, wrong] of rows) {
        const tr = el("tr");
        tr.append(el("th", { scope: "row" }, head));
        for (let i = start; i < Math.min(n, start + per); i++) {
          const bad = wrong && wrong[i];
          tr.append(el("td", bad ? { class: "ls-wrong" } : {}, String(cells[i]) + (bad ? " ✗" : "")));
        }
        band.append(tr);
      }
      t.append(band);
    }
    wrap.replaceChildren(t);
    wrap.lsPer = per;
  }

  /** As many columns per band as the width holds, the bands as even as they can be. */
  function fitTable(wrap) {
    const n = wrap.lsRows[0][1].length;
    const width = wrap.clientWidth;
    if (!width) return; // not laid out (hidden): left as it is
    bandTable(wrap, n);
    const t = wrap.firstChild;
    if (t.offsetWidth <= width) return;
    const widest = (selector) => Math.max(0, ...[...t.querySelectorAll(selector)].map((c) => c.offsetWidth));
    let per = Math.max(1, Math.floor((width - widest("th")) / Math.max(1, widest("td"))));
    per = Math.ceil(n / Math.ceil(n / per)); // 16 in 2 bands of 8, not 11 and 5
    bandTable(wrap, per);
    while (per > 1 && wrap.firstChild.offsetWidth > width) bandTable(wrap, --per);
  }

  /**
   * One heatmap: weights [H, L, S] of head h, drawn on a canvas (one cell per weight,
   * white -> indigo), hidden cells hatched; described in its label for screen readers.
   * Under the map, its readout: the weight under the pointer (or the keyboard's cell),
   * announced (aria-live). `readouts.shown` is the widget's readout that has words, so
   * that one map at a time shows them.
   */
  function heatmap(weights, h, title, rowNames, colNames, allowed, readouts) {
    const [, L, S] = weights.shape;
    const cell = Math.max(8, Math.min(28, Math.floor(260 / Math.max(L, S))));
    const canvas = el("canvas", { width: String(S * cell), height: String(L * cell), role: "img", tabindex: "0" });
    const g = canvas.getContext("2d");
    const best = [];
    for (let i = 0; i < L; i++) {
      let b = 0;
      for (let j = 0; j < S; j++) {
        const w = weights.data[(h * L + i) * S + j];
        if (w > weights.data[(h * L + i) * S + b]) b = j;
        if (allowed && !allowed(i, j)) {
          g.fillStyle = "#9e9e9e";
          g.fillRect(j * cell, i * cell, cell, cell);
          g.strokeStyle = "#616161";
          g.beginPath();
          g.moveTo(j * cell, (i + 1) * cell);
          g.lineTo((j + 1) * cell, i * cell);
          g.stroke();
          continue;
        }
        const r = Math.round(255 - w * (255 - 40));
        const gr = Math.round(255 - w * (255 - 53));
        const bl = Math.round(255 - w * (255 - 147));
        g.fillStyle = "rgb(" + r + "," + gr + "," + bl + ")";
        g.fillRect(j * cell, i * cell, cell, cell);
      }
      best.push(rowNames[i] + "→" + colNames[b]);
    }
    canvas.setAttribute("aria-label", T.mapLabel(title, best.join(", ")));
    const readout = el("p", { class: "ls-readout", "aria-live": "polite", "aria-atomic": "true" });
    let said = null; // the cell the readout says
    const show = (i, j) => {
      if (readouts.shown === readout && said === i + "," + j) return; // said already
      if (readouts.shown && readouts.shown !== readout) readouts.shown.replaceChildren();
      readouts.shown = readout;
      said = i + "," + j;
      const w = weights.data[(h * L + i) * S + j];
      // the title is above the map; a screen reader hears it with the weight
      readout.replaceChildren(el("span", { class: "a11y-visually-hidden" }, T.titled(title)),
        T.readout(rowNames[i], colNames[j], w.toFixed(3)));
    };
    canvas.addEventListener("mousemove", (e) => {
      const box = canvas.getBoundingClientRect();
      const j = Math.floor(((e.clientX - box.left) / box.width) * S);
      const i = Math.floor(((e.clientY - box.top) / box.height) * L);
      if (i >= 0 && i < L && j >= 0 && j < S) show(i, j);
    });
    // keyboard: the arrow keys move over the cells, the readout says each weight
    let at = [0, 0];
    canvas.addEventListener("focus", () => show(at[0], at[1]));
    canvas.addEventListener("keydown", (e) => {
      const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
      if (!step) return;
      e.preventDefault();
      at = [Math.min(L - 1, Math.max(0, at[0] + step[0])), Math.min(S - 1, Math.max(0, at[1] + step[1]))];
      show(at[0], at[1]);
    });
    const figure = el("figure", { class: "ls-map" });
    figure.append(el("figcaption", {}, title), canvas, readout);
    return figure;
  }

  function mapGroup(caption, list, rowNames, colNames, allowed, readouts) {
    const group = el("div");
    group.append(el("p", { class: "ls-caption" }, caption));
    const maps = el("div", { class: "ls-maps" });
    list.forEach((w, l) => {
      for (let h = 0; h < w.shape[0]; h++) maps.append(heatmap(w, h, T.head(l, h), rowNames, colNames, allowed, readouts));
    });
    group.append(maps);
    return group;
  }

  function widget(root, index) {
    if (root.dataset.liveReady) return;
    root.dataset.liveReady = "1";
    const name = root.dataset.liveSmall;
    const kind = name === "causal-copy" ? "causal-lm" : "encoder-decoder";
    const bytes = Number(root.dataset.bytes) || 0;
    const examples = JSON.parse(root.dataset.examples || "[]");
    const uid = "live-" + name + "-" + index + "-";
    const form = el("form", { class: "live-form" });
    const box = el("input", { id: uid + "box", type: "text", spellcheck: "false", autocomplete: "off", inputmode: "numeric" });
    box.value = examples.length ? examples[0].join(" ") : "";
    const button = el("button", { type: "submit", class: "md-button md-button--primary" }, T.load(bytes));
    const exampleRow = el("div", { class: "live-examples", role: "group", "aria-label": T.examples });
    exampleRow.append(el("span", {}, T.examples + ":"));
    examples.forEach((ex, i) => {
      const b = el("button", { type: "button", "data-example": String(i), title: ex.join(" ") }, T.example(i));
      b.addEventListener("click", () => {
        box.value = ex.join(" ");
        form.requestSubmit();
      });
      exampleRow.append(b);
    });
    const actions = el("div", { class: "live-actions" });
    actions.append(button);
    const label = el("label", { for: uid + "box" }, T.box[kind](JSON.parse(root.dataset.symbols), root.dataset.maxLen, root.dataset.trained));
    form.append(label, box, exampleRow, actions);
    const progress = el("progress", { class: "live-progress", max: String(bytes || 1), value: "0", "aria-label": T.loading(0, bytes) });
    progress.hidden = true;
    const status = el("p", { class: "live-status", role: "status", "aria-live": "polite" });
    const error = el("p", { class: "live-error", role: "alert" });
    const result = el("div", { class: "ls-result" });
    root.append(form, progress, status, error, result);
    if (location.protocol === "file:") error.textContent = T.fileUrl;

    let model = null;
    const loadModel = window.AttentionLive.modelOnDemand(
      (onProgress) => load(name, onProgress), progress, status, T);

    async function ensureModel() {
      model = await loadModel();
      button.textContent = T.run;
      root.liveModel = model;
      return model;
    }

    function read(symbols) {
      if (box.value.trim() === "") throw new Error(T.empty);
      const parsed = parseSymbols(box.value, symbols);
      if (parsed.bad) throw new Error(T.bad(parsed.bad, symbols) + (parsed.bad.includes("0") && !symbols.includes(0) ? T.bos : ""));
      return parsed.ids;
    }

    function showCausal(ids) {
      const c = model.config;
      if (ids.length > c.max_len) throw new RangeError(lengthError("tokens", ids.length, c.max_len));
      const start = performance.now();
      const r = causalLM(model, ids);
      const written = generate(model, ids, c.max_len - ids.length);
      const ms = performance.now() - start;
      const readouts = {};
      const names = ids.map((t, i) => i + ":" + t);
      result.replaceChildren(
        el("p", { class: "ls-caption" }, T.predicted),
        table([["t", ids.map((_, i) => i)], [T.input, ids], [T.next, r.predictions]], T.predicted),
        el("p", { class: "ls-caption" }, ids.length < c.max_len ? T.written(c.max_len, c.max_len - ids.length) : T.nothingWritten(c.max_len)),
        table([["t", written.map((_, i) => i)], [T.output, written.map((t, i) => (i < ids.length ? t : "→" + t))]], T.output),
        mapGroup(T.maps, r.weights, names, names, (i, j) => j <= i, readouts),
      );
      fitTables();
      status.textContent = T.doneCausal(c.num_layers, c.num_heads, ids.length, ms.toFixed(1));
      return { ids: ids, predictions: r.predictions, written: written, weights: r.weights, ms: ms };
    }

    function showSeq(ids) {
      const c = model.config;
      if (ids.length > c.max_len) throw new RangeError(lengthError("source", ids.length, c.max_len));
      const start = performance.now();
      const r = encoderDecoder(model, ids);
      const ms = performance.now() - start;
      const wrong = r.written.map((t, i) => t !== ids[i]);
      const wrongAt = wrong.map((w, i) => (w ? i : -1)).filter((i) => i >= 0);
      const readouts = {};
      const inNames = ids.map((t, i) => "in " + i + ":" + t);
      const outNames = r.written.map((t, i) => "out " + i + ":" + t);
      result.replaceChildren(
        table([["t", ids.map((_, i) => i)], [T.source, ids], [T.output, r.written, wrong]], T.output),
        el("p", { class: "ls-caption" }, wrongAt.length ? T.wrongAt(wrongAt.join(", ")) : ""),
        mapGroup(T.encoderMaps, r.encoderWeights, inNames, inNames, null, readouts),
        mapGroup(T.selfMaps, r.selfWeights, outNames, outNames, (i, j) => j <= i, readouts),
        mapGroup(T.crossMaps, r.crossWeights, outNames, inNames, null, readouts),
      );
      fitTables();
      status.textContent = T.doneSeq(ids.length, wrongAt.length, ms.toFixed(1));
      return { ids: ids, written: r.written, wrong: wrongAt, ms: ms };
    }

    // the tables' bands follow the widget's width (a phone turned, a window resized)
    const fitTables = () => result.querySelectorAll(".ls-table").forEach(fitTable);
    let width = 0;
    let pending = 0;
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        if (pending || result.clientWidth === width) return;
        // the next frame: re-cutting the tables here would resize what is observed
        pending = requestAnimationFrame(() => {
          pending = 0;
          width = result.clientWidth;
          fitTables();
        });
      }).observe(result);
    }

    let busy = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (busy) return; // one run at a time
      busy = true;
      // aria-disabled, not disabled: a disabled button loses the keyboard's focus
      button.setAttribute("aria-disabled", "true");
      root.dataset.liveState = "busy";
      error.textContent = "";
      try {
        if (box.value.trim() === "") throw new Error(T.empty); // before fetching anything
        await ensureModel();
        const ids = read(model.config.symbols);
        root.liveResult = kind === "causal-lm" ? showCausal(ids) : showSeq(ids);
        root.dataset.liveState = "done";
      } catch (e) {
        error.textContent = e instanceof LoadError
          ? (location.protocol === "file:" ? T.fileUrl : T.loadFailed(e.message, e.url))
          : e instanceof RangeError ? T.refused + e.message
          : e.message;
        status.textContent = "";
        result.replaceChildren();
        root.dataset.liveState = "error";
      } finally {
        busy = false;
        button.removeAttribute("aria-disabled");
      }
    });
  }

  function init() {
    document.querySelectorAll(".live-small[data-live-small]").forEach(widget);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
