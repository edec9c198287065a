/*
 * attention-live.js: the site's models, run in the reader's browser.
 *
 * One readable forward pass in plain JavaScript, no dependency, nothing from
 * another host. The same steps, in the same order and under the same names, as
 * the lesson modules in attention_src/ (scaled_dot_product.py, multi_head.py,
 * feed_forward.py, encoder.py, models/minilm.py), so that a reader can hold
 * the two side by side.
 *
 * How it loads: a classic script (no module syntax), listed in mkdocs.yml's
 * extra_javascript, that attaches everything to `window.AttentionLive`.
 * Classic scripts, not ES modules, because Chromium refuses module scripts
 * from file:// (a saved copy of the site) while classic ones still run there.
 * Other files build on it the same way (attention-live-small.js, wordpiece.js):
 * they read `window.AttentionLive.ops` when they run.
 *
 * Layout (the contract every op keeps):
 *   - A tensor is `{data: Float32Array, shape: [..]}`, row-major (C order):
 *     the last axis is contiguous, as a contiguous torch tensor.
 *   - One sequence at a time, no batch axis: a sequence is `[L, D]`
 *     (L tokens, D features); per-head tensors are `[H, L, Dh]`; attention
 *     weights are `[H, L, S]` (H heads, L queries, S keys).
 *   - A linear layer's weight is `[out, in]` and its bias `[out]`, exactly as
 *     torch.nn.Linear stores them: y = x W^T + b.
 *   - LayerNorm's gamma and beta are `[D]` (torch: weight, bias).
 *   - A mask is `{data: Uint8Array, shape: [L, S]}` or a key mask
 *     `{data: Uint8Array, shape: [S]}` (broadcast over queries); 1 = may attend,
 *     0 = hidden, as the lessons' bool masks (True = may attend).
 *   - Sums are taken in double precision (JavaScript numbers), results stored
 *     in float32: the page and PyTorch agree to float32 rounding.
 *
 * The ops (window.AttentionLive.ops):
 *   tensor(data, shape), zeros(shape), embedding(table, ids), add(a, b),
 *   linear(x, W, b), layerNorm(x, gamma, beta, eps), softmax(x),
 *   relu(x), gelu(x), splitHeads(x, H), mergeHeads(x),
 *   scaledDotProductAttention(q, k, v, mask, scale), causalMask(L),
 *   keyMask(keep), multiHeadAttention(x, p, numHeads, mask, context),
 *   feedForward(x, p, activation), encoderLayer(x, p, o),
 *   sinusoidalPositionalEncoding(L, D), meanPool(x, keep), cosine(a, b).
 */
(function () {
  "use strict";

  // ---- tensors --------------------------------------------------------------

  function numel(shape) {
    let n = 1;
    for (const s of shape) n *= s;
    return n;
  }

  function shapeStr(shape) {
    return "(" + shape.join(", ") + ")";
  }

  /** A tensor: its numbers (Float32Array) and its shape, checked against each other. */
  function tensor(data, shape) {
    if (!(data instanceof Float32Array)) data = Float32Array.from(data);
    if (data.length !== numel(shape)) {
      throw new RangeError(
        "tensor: " + data.length + " numbers do not fill shape " + shapeStr(shape),
      );
    }
    return { data: data, shape: shape.slice() };
  }

  function zeros(shape) {
    return { data: new Float32Array(numel(shape)), shape: shape.slice() };
  }

  function expectRank(name, t, rank, legend) {
    if (!t || !t.shape || t.shape.length !== rank) {
      throw new TypeError(
        name + " must be " + legend + ", got shape " + (t && t.shape ? shapeStr(t.shape) : String(t)),
      );
    }
  }

  // ---- embedding, add --------------------------------------------------------

  /** Rows of `table` [V, D] picked by `ids` (integers) -> [L, D] (nn.Embedding). */
  function embedding(table, ids) {
    expectRank("table", table, 2, "[V, D]");
    const [V, D] = table.shape;
    const out = zeros([ids.length, D]);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!(Number.isInteger(id) && id >= 0 && id < V)) {
        throw new RangeError("embedding: id " + id + " at position " + i + " is outside 0.." + (V - 1));
      }
      out.data.set(table.data.subarray(id * D, (id + 1) * D), i * D);
    }
    return out;
  }

  /** a + b, elementwise; b has a's shape, or is one row [D] added to every row of a. */
  function add(a, b) {
    const n = a.data.length;
    const m = b.data.length;
    if (m !== n && !(b.shape.length === 1 && b.shape[0] === a.shape[a.shape.length - 1])) {
      throw new RangeError("add: shapes " + shapeStr(a.shape) + " and " + shapeStr(b.shape) + " do not match");
    }
    const out = zeros(a.shape);
    for (let i = 0; i < n; i++) out.data[i] = a.data[i] + b.data[i % m];
    return out;
  }

  // ---- linear, LayerNorm ----------------------------------------------------

  /** y = x W^T + b: x [L, in], W [out, in] (torch.nn.Linear's layout), b [out] or null -> [L, out]. */
  function linear(x, W, b) {
    expectRank("x", x, 2, "[L, in]");
    expectRank("W", W, 2, "[out, in]");
    const [L, n] = x.shape;
    const [m, n2] = W.shape;
    if (n !== n2) {
      throw new RangeError("linear: x " + shapeStr(x.shape) + " has " + n + " features, W " + shapeStr(W.shape) + " expects " + n2);
    }
    if (b && b.data.length !== m) {
      throw new RangeError("linear: bias " + shapeStr(b.shape) + " must have " + m + " entries");
    }
    const X = x.data;
    const w = W.data;
    const out = zeros([L, m]);
    const Y = out.data;
    // output feature j of token i: the dot product of W's row j with x's row i
    // (W's row outside, so that each row of W is read from memory once)
    for (let j = 0; j < m; j++) {
      const wj = j * n;
      for (let i = 0; i < L; i++) {
        const xi = i * n;
        let s = 0;
        for (let k = 0; k < n; k++) s += X[xi + k] * w[wj + k];
        Y[i * m + j] = b ? s + b.data[j] : s;
      }
    }
    return out;
  }

  /** Each row of x [L, D] to mean 0 and variance 1 (biased, as torch), then gamma * . + beta. */
  function layerNorm(x, gamma, beta, eps) {
    expectRank("x", x, 2, "[L, D]");
    const [L, D] = x.shape;
    if (gamma.data.length !== D) {
      throw new RangeError("layerNorm: gamma " + shapeStr(gamma.shape) + " must have D = " + D + " entries");
    }
    const out = zeros([L, D]);
    for (let i = 0; i < L; i++) {
      const row = x.data.subarray(i * D, (i + 1) * D);
      let mean = 0;
      for (let k = 0; k < D; k++) mean += row[k];
      mean /= D;
      let variance = 0;
      for (let k = 0; k < D; k++) variance += (row[k] - mean) * (row[k] - mean);
      variance /= D;
      const inv = 1 / Math.sqrt(variance + eps);
      for (let k = 0; k < D; k++) {
        const normed = (row[k] - mean) * inv;
        out.data[i * D + k] = normed * gamma.data[k] + (beta ? beta.data[k] : 0);
      }
    }
    return out;
  }

  // ---- softmax and activations ----------------------------------------------

  /**
   * Softmax over the last axis, the lesson's stable way (attention_src/softmax.py):
   * 1) shift each row by its maximum, 2) exponentiate, 3) divide by the total.
   * A row of all -Infinity (every key hidden) stays all zeros.
   */
  function softmax(x) {
    const S = x.shape[x.shape.length - 1];
    const rows = x.data.length / S;
    const out = zeros(x.shape);
    for (let r = 0; r < rows; r++) {
      const o = r * S;
      let rowMax = -Infinity;
      for (let j = 0; j < S; j++) if (x.data[o + j] > rowMax) rowMax = x.data[o + j];
      if (!Number.isFinite(rowMax)) rowMax = 0;
      let total = 0;
      const e = new Float64Array(S);
      for (let j = 0; j < S; j++) {
        e[j] = Math.exp(x.data[o + j] - rowMax); // exp(-inf) = 0 for hidden keys
        total += e[j];
      }
      if (!(total > 0)) total = 1;
      for (let j = 0; j < S; j++) out.data[o + j] = e[j] / total;
    }
    return out;
  }

  function relu(x) {
    const out = zeros(x.shape);
    for (let i = 0; i < x.data.length; i++) out.data[i] = x.data[i] > 0 ? x.data[i] : 0;
    return out;
  }

  /**
   * erf(z), for the exact GELU. JavaScript has no Math.erf: this is W. J. Cody's
   * rational approximation as in Numerical Recipes' erfc (Chebyshev fit,
   * fractional error below 1.2e-7, under float32's rounding).
   */
  function erf(z) {
    const t = 1 / (1 + 0.5 * Math.abs(z));
    const r =
      t *
      Math.exp(
        -z * z - 1.26551223 +
          t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
          t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
      );
    return z >= 0 ? 1 - r : r - 1;
  }

  /** GELU, the exact (erf) form: x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)), as F.gelu. */
  function gelu(x) {
    const out = zeros(x.shape);
    for (let i = 0; i < x.data.length; i++) {
      const v = x.data[i];
      out.data[i] = 0.5 * v * (1 + erf(v / Math.SQRT2));
    }
    return out;
  }

  // ---- heads ----------------------------------------------------------------

  /** [L, D] -> [H, L, Dh]: cut the features into H slices of width Dh (split_heads). */
  function splitHeads(x, H) {
    expectRank("x", x, 2, "[L, D]");
    const [L, D] = x.shape;
    if (D % H !== 0) throw new RangeError("splitHeads: D = " + D + " is not divisible by H = " + H);
    const Dh = D / H;
    const out = zeros([H, L, Dh]);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < L; i++)
        for (let d = 0; d < Dh; d++) out.data[(h * L + i) * Dh + d] = x.data[i * D + h * Dh + d];
    return out;
  }

  /** [H, L, Dh] -> [L, H * Dh]: the heads' outputs side by side again (merge_heads). */
  function mergeHeads(x) {
    expectRank("x", x, 3, "[H, L, Dh]");
    const [H, L, Dh] = x.shape;
    const D = H * Dh;
    const out = zeros([L, D]);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < L; i++)
        for (let d = 0; d < Dh; d++) out.data[i * D + h * Dh + d] = x.data[(h * L + i) * Dh + d];
    return out;
  }

  // ---- masks ----------------------------------------------------------------

  /** [L, L]: query i may attend to keys 0..i (the causal mask, True on and below the diagonal). */
  function causalMask(L) {
    const data = new Uint8Array(L * L);
    for (let i = 0; i < L; i++) for (let j = 0; j <= i; j++) data[i * L + j] = 1;
    return { data: data, shape: [L, L] };
  }

  /** [S]: a key mask from a list of booleans (true = real token, false = padding). */
  function keyMask(keep) {
    return { data: Uint8Array.from(keep, (k) => (k ? 1 : 0)), shape: [keep.length] };
  }

  function maskAllows(mask, L, S) {
    if (!mask) return () => true;
    if (mask.shape.length === 1 && mask.shape[0] === S) return (i, j) => mask.data[j] === 1;
    if (mask.shape.length === 2 && mask.shape[0] === L && mask.shape[1] === S) {
      return (i, j) => mask.data[i * S + j] === 1;
    }
    throw new RangeError("mask " + shapeStr(mask.shape) + " fits neither [L, S] = [" + L + ", " + S + "] nor [S]");
  }

  // ---- attention ------------------------------------------------------------

  /**
   * scaled_dot_product_attention: q [H, L, Dk], k [H, S, Dk], v [H, S, Dv],
   * mask [L, S] or [S] or null (1 = may attend), scale (default 1 / sqrt(Dk))
   * -> {output [H, L, Dv], weights [H, L, S]}.
   */
  function scaledDotProductAttention(q, k, v, mask, scale) {
    expectRank("q", q, 3, "[H, L, Dk]");
    expectRank("k", k, 3, "[H, S, Dk]");
    expectRank("v", v, 3, "[H, S, Dv]");
    const [H, L, Dk] = q.shape;
    const S = k.shape[1];
    const Dv = v.shape[2];
    if (k.shape[0] !== H || v.shape[0] !== H || k.shape[2] !== Dk || v.shape[1] !== S) {
      throw new RangeError(
        "scaledDotProductAttention: q " + shapeStr(q.shape) + ", k " + shapeStr(k.shape) + ", v " + shapeStr(v.shape) + " do not agree",
      );
    }
    if (scale === undefined || scale === null) scale = 1 / Math.sqrt(Dk);
    const allowed = maskAllows(mask, L, S);
    // 1) similarity of every query with every key
    const scores = zeros([H, L, S]);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < L; i++) {
        const qi = (h * L + i) * Dk;
        for (let j = 0; j < S; j++) {
          // 2) hide what the mask forbids: exp(-inf) = 0, so those keys get weight 0
          if (!allowed(i, j)) {
            scores.data[(h * L + i) * S + j] = -Infinity;
            continue;
          }
          const kj = (h * S + j) * Dk;
          let s = 0;
          for (let d = 0; d < Dk; d++) s += q.data[qi + d] * k.data[kj + d];
          scores.data[(h * L + i) * S + j] = s * scale;
        }
      }
    // 3) turn each row of scores into weights that sum to 1
    const weights = softmax(scores);
    // 4) each output is the weighted average of the values
    const output = zeros([H, L, Dv]);
    for (let h = 0; h < H; h++)
      for (let i = 0; i < L; i++) {
        const o = (h * L + i) * Dv;
        for (let j = 0; j < S; j++) {
          const w = weights.data[(h * L + i) * S + j];
          if (w === 0) continue;
          const vj = (h * S + j) * Dv;
          for (let d = 0; d < Dv; d++) output.data[o + d] += w * v.data[vj + d];
        }
      }
    return { output: output, weights: weights };
  }

  /**
   * MultiHeadAttention.forward: x [L, D]; p = {q_proj, k_proj, v_proj, out_proj},
   * each {weight [D, D], bias [D] or null}; context [S, D] for cross-attention
   * (keys and values from it), or null for self-attention
   * -> {output [L, D], weights [H, L, S]}, one map per head.
   */
  function multiHeadAttention(x, p, numHeads, mask, context) {
    context = context || x;
    // 1) project, then cut each projection into H heads
    const q = splitHeads(linear(x, p.q_proj.weight, p.q_proj.bias), numHeads); // [H, L, Dh]
    const k = splitHeads(linear(context, p.k_proj.weight, p.k_proj.bias), numHeads); // [H, S, Dh]
    const v = splitHeads(linear(context, p.v_proj.weight, p.v_proj.bias), numHeads); // [H, S, Dh]
    // 2) every head attends independently
    const r = scaledDotProductAttention(q, k, v, mask); // output [H, L, Dh]
    // 3) put the heads side by side and mix them
    return { output: linear(mergeHeads(r.output), p.out_proj.weight, p.out_proj.bias), weights: r.weights };
  }

  /** FeedForward.forward: linear2(activation(linear1(x))); activation "relu" or "gelu". */
  function feedForward(x, p, activation) {
    const act = { relu: relu, gelu: gelu }[activation];
    if (!act) throw new TypeError('feedForward: activation must be "relu" or "gelu", got ' + activation);
    const hidden = act(linear(x, p.linear1.weight, p.linear1.bias)); // [L, d_ff]
    return linear(hidden, p.linear2.weight, p.linear2.bias); // [L, D]
  }

  /**
   * EncoderLayer.forward (attention_src/encoder.py): p = {self_attn, ff, norm1, norm2}
   * (norms: {weight, bias}); o = {numHeads, activation, normFirst, eps}
   * -> {output [L, D], weights [H, L, L]}.
   */
  function encoderLayer(x, p, o, mask) {
    const eps = o.eps === undefined ? 1e-5 : o.eps;
    const norm1 = (t) => layerNorm(t, p.norm1.weight, p.norm1.bias, eps);
    const norm2 = (t) => layerNorm(t, p.norm2.weight, p.norm2.bias, eps);
    if (o.normFirst) {
      const a = multiHeadAttention(norm1(x), p.self_attn, o.numHeads, mask);
      x = add(x, a.output);
      x = add(x, feedForward(norm2(x), p.ff, o.activation));
      return { output: x, weights: a.weights };
    }
    const a = multiHeadAttention(x, p.self_attn, o.numHeads, mask);
    x = norm1(add(x, a.output));
    x = norm2(add(x, feedForward(x, p.ff, o.activation)));
    return { output: x, weights: a.weights };
  }

  /** The sinusoidal table [L, D] of attention_src/positional.py: sin on even features, cos on odd. */
  function sinusoidalPositionalEncoding(L, D) {
    const pe = zeros([L, D]);
    for (let p = 0; p < L; p++)
      for (let twoI = 0; twoI < D; twoI += 2) {
        const angle = p / Math.pow(10000, twoI / D);
        pe.data[p * D + twoI] = Math.sin(angle);
        if (twoI + 1 < D) pe.data[p * D + twoI + 1] = Math.cos(angle);
      }
    return pe;
  }

  /** mean_pool: the average of x [L, D] over the rows where keep is true, scaled to length 1 -> [D]. */
  function meanPool(x, keep) {
    const [L, D] = x.shape;
    const mean = new Float64Array(D);
    let count = 0;
    for (let i = 0; i < L; i++) {
      if (keep && !keep[i]) continue;
      count++;
      for (let d = 0; d < D; d++) mean[d] += x.data[i * D + d];
    }
    let norm = 0;
    for (let d = 0; d < D; d++) {
      mean[d] /= Math.max(count, 1);
      norm += mean[d] * mean[d];
    }
    norm = Math.max(Math.sqrt(norm), 1e-12); // F.normalize's eps
    const out = zeros([D]);
    for (let d = 0; d < D; d++) out.data[d] = mean[d] / norm;
    return out;
  }

  /** Cosine similarity of two vectors [D]. */
  function cosine(a, b) {
    let ab = 0;
    let aa = 0;
    let bb = 0;
    for (let d = 0; d < a.data.length; d++) {
      ab += a.data[d] * b.data[d];
      aa += a.data[d] * a.data[d];
      bb += b.data[d] * b.data[d];
    }
    return ab / Math.max(Math.sqrt(aa * bb), 1e-12);
  }

  const ops = {
    tensor: tensor,
    zeros: zeros,
    numel: numel,
    shapeStr: shapeStr,
    embedding: embedding,
    add: add,
    linear: linear,
    layerNorm: layerNorm,
    softmax: softmax,
    relu: relu,
    erf: erf,
    gelu: gelu,
    splitHeads: splitHeads,
    mergeHeads: mergeHeads,
    causalMask: causalMask,
    keyMask: keyMask,
    scaledDotProductAttention: scaledDotProductAttention,
    multiHeadAttention: multiHeadAttention,
    feedForward: feedForward,
    encoderLayer: encoderLayer,
    sinusoidalPositionalEncoding: sinusoidalPositionalEncoding,
    meanPool: meanPool,
    cosine: cosine,
  };

  /**
   * A widget's model, fetched on the reader's first press and kept: returns
   * ensureModel(), which starts load(onProgress) once, shows its progress in the
   * widget's <progress> and status line (T.loading(got, total)), and after a
   * failed load lets the next press try again. Both widgets' buttons use it
   * (this file's MiniLM, attention-live-small.js's models).
   */
  function modelOnDemand(load, progress, status, T) {
    let model = null;
    let loading = null; // the promise of the model while it loads
    return async function ensureModel() {
      if (model) return model;
      if (!loading) {
        progress.hidden = false;
        loading = load((got, total) => {
          progress.max = total;
          progress.value = got;
          progress.setAttribute("aria-label", T.loading(got, total));
          status.textContent = T.loading(got, total);
        });
      }
      try {
        model = await loading;
      } catch (e) {
        loading = null; // the next press tries again
        throw e;
      } finally {
        progress.hidden = true;
      }
      return model;
    };
  }

  window.AttentionLive = window.AttentionLive || {};
  window.AttentionLive.ops = ops;
  window.AttentionLive.modelOnDemand = modelOnDemand;

  // ==== MiniLM (attention_src/models/minilm.py) on the reader's sentence ======
  //
  // The weights come from the build (site_tools/live_hooks.py): model.json lists
  // every tensor of MiniLM's state dict under our names (embedding.word.weight,
  // layers.0.self_attn.q_proj.weight, ...) with its shape and where it lies in
  // weights-<key>.bin: a matrix as int16 with one float32 scale per row
  // (value = int16 * scale[row]), a vector as float32.

  /** The tensors of the file, back in float32, by name. */
  function readTensors(manifest, buffer) {
    const params = {};
    for (const [name, t] of Object.entries(manifest.tensors)) {
      const n = numel(t.shape);
      if (t.dtype === "float32") {
        params[name] = tensor(new Float32Array(buffer, t.offset, n).slice(), t.shape);
      } else if (t.dtype === "int16-rows") {
        const [rows, cols] = t.shape;
        const q = new Int16Array(buffer, t.offset, n);
        const scales = new Float32Array(buffer, t.scales, rows);
        const data = new Float32Array(n);
        for (let r = 0; r < rows; r++)
          for (let c = 0; c < cols; c++) data[r * cols + c] = q[r * cols + c] * scales[r];
        params[name] = tensor(data, t.shape);
      } else {
        throw new TypeError("unknown dtype " + t.dtype + " for " + name + " in model.json");
      }
    }
    return params;
  }

  /** The bytes at `url`, reporting (bytes so far, total) as they arrive. */
  async function fetchBytes(url, total, onProgress) {
    const response = await fetch(url);
    if (!response.ok) throw new LoadError(response.status + " " + response.statusText, url);
    if (!response.body || !response.body.getReader) {
      const whole = await response.arrayBuffer();
      onProgress(whole.byteLength, total);
      return whole;
    }
    const reader = response.body.getReader();
    let out = new Uint8Array(total || 1 << 20);
    let got = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (got + value.length > out.length) {
        const bigger = new Uint8Array(Math.max(out.length * 2, got + value.length));
        bigger.set(out.subarray(0, got));
        out = bigger;
      }
      out.set(value, got);
      got += value.length;
      onProgress(got, total);
    }
    if (total && got !== total) throw new LoadError("got " + got + " of " + total + " bytes", url);
    return out.buffer.slice(0, got);
  }

  class LoadError extends Error {
    constructor(why, url) {
      super(why);
      this.url = url;
    }
  }

  /**
   * Load MiniLM: model.json, then its weights and vocabulary ->
   * {manifest, config, params, vocabText}. onProgress(bytes, total) follows the download.
   */
  async function loadMiniLM(manifestUrl, onProgress) {
    const base = new URL(manifestUrl, document.baseURI);
    const response = await fetch(base);
    if (!response.ok) throw new LoadError(response.status + " " + response.statusText, base.href);
    const manifest = await response.json();
    const total = manifest.bytes + manifest.vocab_bytes;
    const progress = onProgress || (() => {});
    const buffer = await fetchBytes(new URL(manifest.weights, base), manifest.bytes, (got) =>
      progress(got, total),
    );
    const vocabResponse = await fetch(new URL(manifest.vocab, base));
    if (!vocabResponse.ok) {
      throw new LoadError(vocabResponse.status + " " + vocabResponse.statusText, manifest.vocab);
    }
    const vocabText = await vocabResponse.text();
    progress(total, total);
    return { manifest: manifest, config: manifest.config, params: readTensors(manifest, buffer), vocabText: vocabText };
  }

  /** The parameters of layer i, shaped as EncoderLayer's modules. */
  function layerParams(params, i) {
    const p = "layers." + i + ".";
    const lin = (name) => ({ weight: params[p + name + ".weight"], bias: params[p + name + ".bias"] });
    return {
      self_attn: { q_proj: lin("self_attn.q_proj"), k_proj: lin("self_attn.k_proj"), v_proj: lin("self_attn.v_proj"), out_proj: lin("self_attn.out_proj") },
      ff: { linear1: lin("ff.linear1"), linear2: lin("ff.linear2") },
      norm1: lin("norm1"),
      norm2: lin("norm2"),
    };
  }

  /** BertEmbedding.forward: word + position + token type (all 0: one sentence), then LayerNorm. */
  function bertEmbedding(model, ids) {
    const P = model.params;
    const positions = ids.map((_, i) => i); // 0, 1, ..., L - 1
    const tokenTypes = ids.map(() => 0);
    const x = add(
      add(embedding(P["embedding.word.weight"], ids), embedding(P["embedding.position.weight"], positions)),
      embedding(P["embedding.token_type.weight"], tokenTypes),
    ); // [L, D]
    return layerNorm(x, P["embedding.norm.weight"], P["embedding.norm.bias"], model.config.layer_norm_eps);
  }

  /**
   * MiniLM.forward on one sentence (no padding, so no mask): token ids ->
   * {hidden [L, D], weights: one [H, L, L] per layer}. afterLayer(i), if given, is
   * awaited after each layer (the widget lets the page repaint there).
   */
  async function minilmForward(model, ids, afterLayer) {
    const c = model.config;
    if (ids.length > c.max_len) {
      throw new RangeError(ids.length + " tokens: MiniLM has " + c.max_len + " positions");
    }
    let x = bertEmbedding(model, ids); // [L, D]
    const weights = [];
    for (let i = 0; i < c.num_layers; i++) {
      const r = encoderLayer(x, layerParams(model.params, i), {
        numHeads: c.num_heads, activation: c.activation, normFirst: c.norm_first, eps: c.layer_norm_eps,
      }); // post-norm, exact GELU, as BERT
      x = r.output;
      weights.push(r.weights); // [H, L, L]
      if (afterLayer) await afterLayer(i);
    }
    return { hidden: x, weights: weights };
  }

  /** MiniLM.sentence_embedding: the mean of the last layer over the tokens, length 1 -> [D]. */
  async function sentenceEmbedding(model, ids) {
    return meanPool((await minilmForward(model, ids)).hidden, null);
  }

  window.AttentionLive.minilm = {
    load: loadMiniLM,
    readTensors: readTensors,
    forward: minilmForward,
    sentenceEmbedding: sentenceEmbedding,
    // the page's WordPiece (wordpiece.js) with the options model.json read off tokenizer.json
    tokenizer: (model) => window.AttentionWordPiece.fromVocab(model.vocabText, wordPieceOptions(model.manifest.tokenizer)),
    LoadError: LoadError,
  };

  // ==== the widget (docs/chapters/real-encoder.md) ============================
  //
  // <div class="live-minilm" data-live-model="…/model.json" data-live-bytes="N">
  // holds a paragraph for readers without JavaScript; this script puts the form
  // in its place. Nothing is fetched until the reader presses the button.

  const ZH = (document.documentElement.lang || "").slice(0, 2) === "zh";
  const MB = (bytes) => (bytes / 1e6).toFixed(1) + " MB";
  const T = ZH ? {
    first: "你的句子", second: "第二个句子（用来比较句向量，可留空）",
    load: (b) => "加载 MiniLM（" + MB(b) + "）并运行", run: "运行",
    loading: (got, total) => "正在加载权重：" + MB(got) + " / " + MB(total),
    computing: (l, n) => "正在计算第 " + l + " 层（共 " + n + " 层）…",
    done: (layers, heads, L, ms) => "已在 " + L + " 个词元上算完 " + layers + " 层 × " + heads + " 个头，用时 " + ms + " 毫秒。",
    similarity: (v) => "两个句子的余弦相似度（均值池化后归一化）：" + v,
    empty: "请先输入一个句子。",
    tooLong: (n, max) => "这个句子有 " + n + " 个词元，超过了 MiniLM 的 " + max + " 个位置。请缩短它。",
    secondTooLong: (n, max) => "第二个句子有 " + n + " 个词元，超过了 MiniLM 的 " + max + " 个位置。",
    unknown: (words) => "MiniLM 的词表拼不出这些词（其中有词表里没有的字符），它们变成了 [UNK]：" + words,
    loadFailed: (why, url) => "模型文件加载失败（" + why + "，" + url + "）。请刷新页面再试一次。",
    fileUrl: "这个页面是从 file:// 打开的：Chromium 不允许页面从 file:// 读取文件（fetch），所以这里加载不了模型。"
      + "请通过 http:// 打开本站，例如在站点目录中运行 python -m http.server。",
    noTokenizer: "分词器脚本（wordpiece.js）没有加载，无法切分句子。",
    caption: "MiniLM 在你的句子上的每一个头。把鼠标移到某个词元上、点按或聚焦它，即可把它设为查询。"
      + "[UNK] 旁边写着它代替的原文。",
  } : {
    first: "Your sentence", second: "A second sentence, to compare the sentence vectors (optional)",
    load: (b) => "Load MiniLM (" + MB(b) + ") and run", run: "Run",
    loading: (got, total) => "Loading the weights: " + MB(got) + " of " + MB(total),
    computing: (l, n) => "Computing layer " + l + " of " + n + "…",
    done: (layers, heads, L, ms) => "Computed " + layers + " layers × " + heads + " heads on " + L + " tokens in " + ms + " ms.",
    similarity: (v) => "Cosine similarity of the two sentences (mean pooling, normalised): " + v,
    empty: "Type a sentence first.",
    tooLong: (n, max) => "This sentence is " + n + " tokens, more than MiniLM's " + max + " positions. Shorten it.",
    secondTooLong: (n, max) => "The second sentence is " + n + " tokens, more than MiniLM's " + max + " positions.",
    unknown: (words) => "MiniLM's vocabulary cannot spell these words (they hold characters it does not have), so they became [UNK]: " + words,
    loadFailed: (why, url) => "The model file failed to load (" + why + ", " + url + "). Reload the page to try again.",
    fileUrl: "This page was opened from file://: Chromium does not let a page fetch files from file://, so the model "
      + "cannot load here. Open the site over http://, e.g. run python -m http.server in the site's folder.",
    noTokenizer: "The tokenizer's script (wordpiece.js) did not load, so the sentence cannot be cut into tokens.",
    caption: "Every head of MiniLM on your sentence. Hover, tap or focus a token to make it the query. "
      + "An [UNK] shows the text it stands for beside it.",
  };

  /** model.json's tokenizer options (tokenizer.json's names) -> wordpiece.js's names. */
  function wordPieceOptions(t) {
    return {
      lowercase: t.lowercase,
      stripAccents: t.strip_accents,
      cleanText: t.clean_text,
      handleChineseChars: t.handle_chinese_chars,
      unkToken: t.unk_token,
      continuingSubwordPrefix: t.continuing_subword_prefix,
      maxInputCharsPerWord: t.max_input_chars_per_word,
    };
  }

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const nextFrame = () => new Promise((resolve) => setTimeout(resolve, 0));

  function widget(root, index) {
    const bytes = Number(root.dataset.liveBytes) || 0;
    const uid = "live-minilm-" + index + "-";
    root.querySelectorAll(".live-nojs").forEach((n) => n.remove());
    const form = el("form", { class: "live-form" });
    const firstBox = el("textarea", { id: uid + "a", rows: "2", spellcheck: "false" });
    firstBox.value = root.dataset.liveFirst || "The animal didn't cross the street because it was too tired.";
    const secondBox = el("input", { id: uid + "b", type: "text", spellcheck: "false" });
    secondBox.value = root.dataset.liveSecond || "";
    const button = el("button", { type: "submit", class: "md-button md-button--primary" }, T.load(bytes));
    form.append(
      el("label", { for: uid + "a" }, T.first), firstBox,
      el("label", { for: uid + "b" }, T.second), secondBox,
      el("div", { class: "live-actions" }),
    );
    form.lastChild.append(button);
    const progress = el("progress", { class: "live-progress", max: String(bytes || 1), value: "0", "aria-label": T.loading(0, bytes) });
    progress.hidden = true;
    const status = el("p", { class: "live-status", role: "status", "aria-live": "polite" });
    const error = el("p", { class: "live-error", role: "alert" });
    const similarity = el("p", { class: "live-similarity", "aria-live": "polite" });
    // a <div>, not a <figure>: the page's figures are the build's, numbered; this one is yours
    const figure = el("div", { class: "attention-explorer live-explorer", id: "live-minilm-explorer-" + index,
      role: "group", "aria-label": T.caption });
    figure.append(el("p", { class: "live-caption" }, T.caption));
    figure.hidden = true;
    root.append(form, progress, status, error, similarity, figure);
    root.classList.add("live-ready");
    if (location.protocol === "file:") error.textContent = T.fileUrl;

    let model = null;
    let tokenizer = null;
    const loadModel = modelOnDemand(
      (onProgress) => loadMiniLM(root.dataset.liveModel, onProgress), progress, status, T);

    async function ensureModel() {
      model = await loadModel();
      button.textContent = T.run;
      return model;
    }

    function encode(text) {
      if (!window.AttentionWordPiece) throw new Error(T.noTokenizer);
      if (!tokenizer) {
        tokenizer = window.AttentionLive.minilm.tokenizer(model);
      }
      return tokenizer.encode(text);
    }

    /** No explorer, no similarity: what a failed run leaves (never the last sentence's). */
    function clearResult() {
      figure.hidden = true;
      const old = figure.querySelector(".ae-root");
      if (old) old.remove();
      similarity.textContent = "";
      root.liveResult = null;
    }

    async function run() {
      error.textContent = "";
      const text = firstBox.value;
      if (text.trim() === "") throw new Error(T.empty);
      await ensureModel();
      const max = model.config.max_len;
      const first = encode(text);
      if (first.ids.length > max) throw new Error(T.tooLong(first.ids.length, max));
      const other = secondBox.value.trim() === "" ? null : encode(secondBox.value);
      if (other && other.ids.length > max) throw new Error(T.secondTooLong(other.ids.length, max));
      const start = performance.now();
      const n = model.config.num_layers;
      const r = await minilmForward(model, first.ids, async (i) => {
        status.textContent = T.computing(i + 1, n);
        await nextFrame(); // let the page repaint: the widget never looks frozen
      });
      const H = model.config.num_heads;
      const L = first.ids.length;
      const query = Math.min(L - 1, first.tokens.indexOf("it") >= 0 ? first.tokens.indexOf("it") : 1);
      // each [UNK] with the word it stands for (as the tokenizer normalised it)
      const stands = first.tokens.map(() => "");
      first.unknownAt.forEach((at, k) => { stands[at] = first.unknown[k]; });
      window.AttentionExplorer.show(figure, {
        tokens: first.tokens,
        stands: stands,
        layers: n,
        heads: H,
        start: { layer: 0, head: 0, token: query },
        weightAt: (l, h, i, j) => r.weights[l].data[(h * L + i) * L + j],
      });
      figure.hidden = false;
      const mapMs = performance.now() - start;
      let sim = null;
      if (other) {
        const a = meanPool(r.hidden, null);
        const b = await sentenceEmbedding(model, other.ids);
        sim = cosine(a, b).toFixed(3);
        similarity.textContent = T.similarity(sim);
      } else {
        similarity.textContent = "";
      }
      // the words that became [UNK] (wordpiece.js lists them, as normalised)
      const unknown = first.unknown.concat(other ? other.unknown : []);
      if (unknown.length) error.textContent = T.unknown([...new Set(unknown)].join(" "));
      status.textContent = T.done(n, H, L, Math.round(mapMs));
      root.dataset.liveState = "done";
      // for the benchmark and the tests: what the page computed, and how fast
      root.liveResult = { tokens: first.tokens, ids: first.ids, weights: r.weights, mapMs: mapMs, similarity: sim };
    }

    let busy = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (busy) return; // one run at a time
      busy = true;
      // aria-disabled, not disabled: a disabled button loses the keyboard's focus
      button.setAttribute("aria-disabled", "true");
      root.dataset.liveState = "busy";
      try {
        await run();
      } catch (e) {
        error.textContent = e instanceof LoadError ? T.loadFailed(e.message, e.url)
          : e instanceof TypeError && /fetch/i.test(e.message) ? (location.protocol === "file:" ? T.fileUrl : T.loadFailed(e.message, root.dataset.liveModel))
          : e.message;
        status.textContent = "";
        clearResult();
        root.dataset.liveState = "error";
      } finally {
        busy = false;
        button.removeAttribute("aria-disabled");
        if (root.dataset.liveState === "busy") root.dataset.liveState = "idle";
      }
    });
  }

  function init() {
    document.querySelectorAll(".live-minilm").forEach(widget);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
