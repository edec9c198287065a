/* The offline attention explorer (site_tools/outputs/explorer.py writes its data).
 *
 * Every <figure class="attention-explorer"> holds a <script type="application/json"
 * class="ae-data"> with {tokens, layers, heads, scale, weights[l][h][i][j], start}.
 * This script builds, inside the figure: a layer and a head selector, the tokens
 * as buttons (move the pointer onto one, tap or focus it to make it the query; arrow
 * keys move), each token shaded by the weight the query gives it, with the weight
 * written under it, and a grid of every head's thumbnail for the query (click one, or
 * move with the arrow keys, to select it). The tokens are one tab stop and the grid
 * another (a roving tabindex: the query's chip and the selected thumbnail take the
 * focus, the arrow keys move it inside), so that a long sentence does not cost a
 * keyboard reader a Tab per token and per head. A pointer that rests where a token
 * appears does not choose it: only a pointer that moves over the tokens does.
 * Nothing is fetched: the page works from file://. Hand-written, no library.
 *
 * Other scripts can feed it new data: window.AttentionExplorer.show(figure, data)
 * builds (or rebuilds) the explorer inside `figure` from {tokens, layers, heads,
 * start: {layer, head, token}} and either weights[l][h][i][j] with scale, or a
 * function weightAt(l, h, i, j) -> weight (attention-live.js passes the weights
 * the page has just computed); optionally stands[i], the text a token stands for
 * where its name does not say it (an [UNK]'s word), shown and read with the token. */
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
    gridHelp: "方向键在各个头之间移动。",
    // an [UNK] token and the text it stands for
    stands: (t, s) => t + "（" + s + "）",
    tokens: "词元：选择查询",
    grid: "每个头：查询关注哪里",
    // a chip's name starts with what it shows (the token, its weight), then says what it is
    weight: (t, w, q) => t + " " + w + "（权重" + (q ? "；这是查询" : "") + "）",
    summary: (l, h, t, b, w) => "第 " + l + " 层第 " + h + " 头：" + t + " 最关注 " + b + "（" + w + "）。",
    gridTitle: (n, t) => "查询 " + t + " 在全部 " + n + " 个头上的注意力（行：层，列：头；"
      + "每条：它在每个词元上的权重，从左到右）。点击某一条，或用方向键，即可选中它。",
    thumb: (l, h, t, w) => "第 " + l + " 层第 " + h + " 头：权重最大的是 " + t + "（" + w + "）",
  } : {
    layer: "layer", head: "head",
    help: "Hover, tap or focus a token to see where it attends; ← → move between tokens.",
    gridHelp: "The arrow keys move between the heads.",
    stands: (t, s) => t + " (" + s + ")",
    tokens: "tokens: choose the query",
    grid: "every head: where the query attends",
    weight: (t, w, q) => t + " " + w + " (weight" + (q ? "; the query" : "") + ")",
    summary: (l, h, t, b, w) => "Layer " + l + ", head " + h + ": " + t + " attends most to "
      + b + " (" + w + ").",
    gridTitle: (n, t) => "All " + n + " heads for the query " + t + " (rows: layers, columns: "
      + "heads; each strip: its weight on every token, left to right). Click one, or use the "
      + "arrow keys, to select it.",
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
    const stands = data.stands || [];
    // what a token is called in the words around it: its name, and what it stands for;
    // a chip's name holds its visible words as they show ("[UNK] 们": WCAG 2.5.3)
    const named = (i) => (stands[i] ? T.stands(data.tokens[i], stands[i]) : data.tokens[i]);
    const chipName = (i) => (stands[i] ? data.tokens[i] + " " + stands[i] : data.tokens[i]);
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
    // a toolbar: one tab stop, the arrow keys move inside (the chips' tabindex roves)
    const row = el("div", { class: "ae-tokens", role: "toolbar", "aria-label": T.tokens });
    const chips = data.tokens.map((t, i) => {
      const chip = el("button", { type: "button", class: "ae-token", "data-i": i, tabindex: "-1" });
      if (stands[i]) {  // an [UNK] says what it stands for, beside its name
        const line = el("span", { class: "ae-line" });
        line.append(el("span", { class: "ae-text" }, t), " ", el("span", { class: "ae-stands" }, stands[i]));
        chip.append(line);
      } else {
        chip.append(el("span", { class: "ae-text" }, t));
      }
      chip.append(" ");  // the words a screen reader and axe read: "token weight"
      chip.append(el("span", { class: "ae-weight" }, ""));
      row.append(chip);
      return chip;
    });
    root.append(help, row, summary);

    // --- the grid of every head's thumbnail for the selected token
    const gridTitle = el("p", { class: "ae-grid-title" });
    const gridHelp = el("span", { class: "a11y-visually-hidden", id: uid + "grid-help" }, T.gridHelp);
    const grid = el("div", { class: "ae-grid", role: "group", "aria-label": T.grid,
      "aria-describedby": uid + "grid-help" });
    grid.style.setProperty("--ae-heads", data.heads);
    grid.append(el("span", { class: "ae-corner" }, ""));
    for (let h = 0; h < data.heads; h++) grid.append(el("span", { class: "ae-col" }, "h" + h));
    const thumbs = [];
    for (let l = 0; l < data.layers; l++) {
      grid.append(el("span", { class: "ae-rowname" }, "L" + l));
      thumbs.push([]);
      for (let h = 0; h < data.heads; h++) {
        const thumb = el("button", { type: "button", class: "ae-thumb",
          "data-layer": l, "data-head": h, tabindex: "-1" });
        thumb.style.setProperty("--ae-L", L);
        for (let j = 0; j < L; j++) thumb.append(el("span", { class: "ae-cell" }));
        thumb.addEventListener("click", () => { state.layer = l; state.head = h; render(); });
        grid.append(thumb);
        thumbs[l].push(thumb);
      }
    }
    root.append(gridTitle, gridHelp, grid);

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
        chip.setAttribute("aria-label", T.weight(chipName(j), fmt(w), j === i));
        chip.tabIndex = j === i ? 0 : -1; // the query's chip is the tokens' tab stop
      });
      summary.textContent = T.summary(l, h, named(i), named(best),
        fmt(weight(l, h, i, best)));
      gridTitle.textContent = T.gridTitle(data.layers * data.heads, named(i));
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
          thumb.tabIndex = on ? 0 : -1; // the selected head is the grid's tab stop
          thumb.setAttribute("aria-label", T.thumb(ll, hh, named(top),
            fmt(weight(ll, hh, i, top))));
        }
      }
    }

    function choose(i) {
      if (i === state.token) return;
      state.token = i;
      render();
    }
    // The pointer chooses a token only when it moves over it: a pointer resting where the
    // explorer appears (or where the page scrolls a token to) is not the reader's choice.
    // Such an event carries the position the pointer already had (or no movement at all).
    let pointerAt = null;
    row.addEventListener("pointermove", (event) => {
      const at = event.clientX + "," + event.clientY;
      const moved = pointerAt === null ? event.movementX !== 0 || event.movementY !== 0
        : at !== pointerAt;
      pointerAt = at;
      const chip = event.target.closest && event.target.closest(".ae-token");
      if (moved && chip && row.contains(chip)) choose(Number(chip.dataset.i));
    });
    chips.forEach((chip, i) => {
      chip.addEventListener("focus", () => choose(i));
      chip.addEventListener("click", () => choose(i));
      chip.addEventListener("keydown", (event) => {
        const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
        const next = event.key === "Home" ? 0 : event.key === "End" ? L - 1
          : step === undefined ? null : Math.min(L - 1, Math.max(0, i + step));
        if (next === null) return;
        event.preventDefault();
        chips[next].focus();
      });
    });
    // the grid: left and right move between heads, up and down between layers; the head
    // the focus lands on is selected (as the selectors above select)
    thumbs.forEach((line, l) => line.forEach((thumb, h) => {
      thumb.addEventListener("keydown", (event) => {
        const step = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0],
          ArrowUp: [-1, 0] }[event.key];
        let to = null;
        if (step) to = [l + step[0], h + step[1]];
        if (event.key === "Home") to = [event.ctrlKey ? 0 : l, 0];
        if (event.key === "End") to = [event.ctrlKey ? data.layers - 1 : l, data.heads - 1];
        if (to === null) return;
        event.preventDefault();
        const ll = Math.min(data.layers - 1, Math.max(0, to[0]));
        const hh = Math.min(data.heads - 1, Math.max(0, to[1]));
        state.layer = ll;
        state.head = hh;
        render();
        thumbs[ll][hh].focus();
      });
    }));
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
