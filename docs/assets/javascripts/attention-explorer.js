/* The offline attention explorer (site_tools/explorer.py writes its data).
 *
 * Every <figure class="attention-explorer"> holds a <script type="application/json"
 * class="ae-data"> with {tokens, layers, heads, scale, weights[l][h][i][j], start}.
 * This script builds, inside the figure: a layer and a head selector, the tokens
 * as buttons (hover, tap or focus one to make it the query; arrow keys move), each
 * token shaded by the weight the query gives it, with the weight written under it,
 * and a grid of every head's thumbnail for the query (click one to select it).
 * Nothing is fetched: the page works from file://. Hand-written, no library.
 *
 * Other scripts can feed it new data: window.AttentionExplorer.show(figure, data)
 * builds (or rebuilds) the explorer inside `figure` from {tokens, layers, heads,
 * start: {layer, head, token}} and either weights[l][h][i][j] with scale, or a
 * function weightAt(l, h, i, j) -> weight (attention-live.js passes the weights
 * the page has just computed). */
(function () {
  "use strict";

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fmt(w) {
    return w.toFixed(3);
  }

  // The explorer's words in the page's language (<html lang>): English or Chinese.
  const ZH = (document.documentElement.lang || "").slice(0, 2) === "zh";
  const T = ZH ? {
    layer: "层", head: "头",
    help: "将鼠标移到某个词元上、点按或用键盘聚焦它，即可看到它关注哪里；← → 在词元间移动。",
    tokens: "词元：选择查询",
    grid: "每个头：查询关注哪里",
    // a chip's name starts with what it shows (the token, its weight), then says what it is
    weight: (t, w, q) => t + " " + w + "（权重" + (q ? "；这是查询" : "") + "）",
    summary: (l, h, t, b, w) => "第 " + l + " 层第 " + h + " 头：" + t + " 最关注 " + b + "（" + w + "）。",
    gridTitle: (n, t) => "查询 " + t + " 在全部 " + n + " 个头上的注意力（行：层，列：头；"
      + "每条：它在每个词元上的权重，从左到右）。点击某一条即可选中它。",
    thumb: (l, h, t, w) => "第 " + l + " 层第 " + h + " 头：权重最大的是 " + t + "（" + w + "）",
  } : {
    layer: "layer", head: "head",
    help: "Hover, tap or focus a token to see where it attends; ← → move between tokens.",
    tokens: "tokens: choose the query",
    grid: "every head: where the query attends",
    weight: (t, w, q) => t + " " + w + " (weight" + (q ? "; the query" : "") + ")",
    summary: (l, h, t, b, w) => "Layer " + l + ", head " + h + ": " + t + " attends most to "
      + b + " (" + w + ").",
    gridTitle: (n, t) => "All " + n + " heads for the query " + t + " (rows: layers, columns: "
      + "heads; each strip: its weight on every token, left to right). Click one to select it.",
    thumb: (l, h, t, w) => "layer " + l + " head " + h + ": most weight on " + t + " (" + w + ")",
  };

  function build(figure, index, given) {
    let data = given;
    if (!data) {
      const script = figure.querySelector("script.ae-data");
      if (!script || figure.dataset.aeReady) return;
      data = JSON.parse(script.textContent);
    }
    const L = data.tokens.length;
    const weight = data.weightAt || ((l, h, i, j) => data.weights[l][h][i][j] / data.scale);
    const state = {
      layer: data.start.layer, head: data.start.head, token: data.start.token,
    };
    const uid = (figure.id || "ae-" + index) + "-";

    const root = el("div", { class: "ae-root" });
    // --- the selectors
    const controls = el("div", { class: "ae-controls" });
    function selector(name, count, value) {
      const label = el("label", { class: "ae-select", for: uid + name }, T[name] + " ");
      const select = el("select", { id: uid + name, "data-ae": name });
      for (let k = 0; k < count; k++) select.append(el("option", { value: k }, String(k)));
      select.value = String(value);
      label.append(select);
      controls.append(label);
      return select;
    }
    const layerSel = selector("layer", data.layers, state.layer);
    const headSel = selector("head", data.heads, state.head);
    const summary = el("p", { class: "ae-summary", "aria-live": "polite" });
    root.append(controls);

    // --- the tokens
    const help = el("p", { class: "ae-help" }, T.help);
    const row = el("div", { class: "ae-tokens", role: "group", "aria-label": T.tokens });
    const chips = data.tokens.map((t, i) => {
      const chip = el("button", { type: "button", class: "ae-token", "data-i": i });
      chip.append(el("span", { class: "ae-text" }, t));
      chip.append(" ");  // the words a screen reader and axe read: "token weight"
      chip.append(el("span", { class: "ae-weight" }, ""));
      row.append(chip);
      return chip;
    });
    root.append(help, row, summary);

    // --- the grid of every head's thumbnail for the selected token
    const gridTitle = el("p", { class: "ae-grid-title" });
    const grid = el("div", { class: "ae-grid", role: "group", "aria-label": T.grid });
    grid.style.setProperty("--ae-heads", data.heads);
    grid.append(el("span", { class: "ae-corner" }, ""));
    for (let h = 0; h < data.heads; h++) grid.append(el("span", { class: "ae-col" }, "h" + h));
    const thumbs = [];
    for (let l = 0; l < data.layers; l++) {
      grid.append(el("span", { class: "ae-rowname" }, "L" + l));
      thumbs.push([]);
      for (let h = 0; h < data.heads; h++) {
        const thumb = el("button", { type: "button", class: "ae-thumb",
          "data-layer": l, "data-head": h });
        thumb.style.setProperty("--ae-L", L);
        for (let j = 0; j < L; j++) thumb.append(el("span", { class: "ae-cell" }));
        thumb.addEventListener("click", () => { state.layer = l; state.head = h; render(); });
        grid.append(thumb);
        thumbs[l].push(thumb);
      }
    }
    root.append(gridTitle, grid);

    function render() {
      const { layer: l, head: h, token: i } = state;
      layerSel.value = String(l);
      headSel.value = String(h);
      let best = 0;
      chips.forEach((chip, j) => {
        const w = weight(l, h, i, j);
        if (w > weight(l, h, i, best)) best = j;
        chip.style.setProperty("--ae-w", w);
        chip.dataset.weight = String(w);
        chip.querySelector(".ae-weight").textContent = fmt(w);
        chip.classList.toggle("ae-query", j === i);
        chip.setAttribute("aria-pressed", j === i ? "true" : "false");
        chip.setAttribute("aria-label", T.weight(data.tokens[j], fmt(w), j === i));
      });
      summary.textContent = T.summary(l, h, data.tokens[i], data.tokens[best],
        fmt(weight(l, h, i, best)));
      gridTitle.textContent = T.gridTitle(data.layers * data.heads, data.tokens[i]);
      for (let ll = 0; ll < data.layers; ll++) {
        for (let hh = 0; hh < data.heads; hh++) {
          const thumb = thumbs[ll][hh];
          let top = 0;
          [...thumb.children].forEach((cell, j) => {
            const w = weight(ll, hh, i, j);
            if (w > weight(ll, hh, i, top)) top = j;
            cell.style.setProperty("--ae-w", w);
          });
          const on = ll === l && hh === h;
          thumb.classList.toggle("ae-selected", on);
          thumb.setAttribute("aria-pressed", on ? "true" : "false");
          thumb.setAttribute("aria-label", T.thumb(ll, hh, data.tokens[top],
            fmt(weight(ll, hh, i, top))));
        }
      }
    }

    function choose(i) {
      if (i === state.token) return;
      state.token = i;
      render();
    }
    chips.forEach((chip, i) => {
      chip.addEventListener("mouseenter", () => choose(i));
      chip.addEventListener("focus", () => choose(i));
      chip.addEventListener("click", () => choose(i));
      chip.addEventListener("keydown", (event) => {
        const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
        if (step === undefined) return;
        event.preventDefault();
        const next = Math.min(L - 1, Math.max(0, i + step));
        chips[next].focus();
      });
    });
    layerSel.addEventListener("change", () => { state.layer = Number(layerSel.value); render(); });
    headSel.addEventListener("change", () => { state.head = Number(headSel.value); render(); });

    const old = figure.querySelector(".ae-root");  // a rebuild replaces the last explorer
    if (old) old.remove();
    figure.insertBefore(root, figure.querySelector("figcaption"));
    figure.dataset.aeReady = "1";
    figure.classList.add("ae-ready");
    render();
  }

  // rebuilds are numbered apart from the page's own figures (ids stay unique)
  let shown = 0;
  window.AttentionExplorer = {
    show: (figure, data) => build(figure, "live-" + shown++, data),
  };

  function init() {
    document.querySelectorAll("figure.attention-explorer").forEach((f, i) => build(f, i));
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
