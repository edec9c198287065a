// A figure opens full-size from an "Open full-size" button under it, in GLightbox
// (its script and stylesheet come with mkdocs-glightbox, whose own wrapping of
// images is off: `manual: true` in mkdocs.yml; its link around each image repeated
// the figure's data URI when figures were inline). A built figure's image is a file
// of assets/figures/, loaded lazily (site_tools/hooks.py); the lightbox opens that file.
// - a diagram (an inline SVG in <figure class="diagram">) opens as a copy of its SVG,
//   so that it keeps following the light/dark toggle;
// - a built figure (<figure class="built-figure">, an <img>) opens as that image.
// The figure stays an image: the SVG keeps role="img", its title and description,
// the <img> its alt text; the button is a control of its own, named by its words.
(function () {
  function caption(figure) {
    var text = figure.querySelector("figcaption");
    return text ? text.innerHTML : "";
  }
  function openDiagram(figure) {
    var svg = figure.querySelector("svg");
    if (!svg || typeof GLightbox === "undefined") return;
    var width = svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
    var copy = svg.cloneNode(true);
    if (width) copy.style.width = width + "px";
    copy.style.maxWidth = "none";
    var box = document.createElement("div");
    box.className = "diagram diagram-zoom";
    box.appendChild(copy);
    GLightbox({
      elements: [{ content: box, width: "100vw", height: "auto", description: caption(figure) }],
      touchNavigation: true,
      loop: false,
    }).open();
  }
  function openImage(figure) {
    var img = figure.querySelector("img");
    if (!img || typeof GLightbox === "undefined") return;
    GLightbox({
      elements: [{ href: img.currentSrc || img.src, type: "image", alt: img.alt,
                   description: caption(figure) }],
      touchNavigation: true,
      loop: false,
      zoomable: true,
      draggable: true,
    }).open();
  }
  var LABEL = { en: "Open full-size", zh: "查看大图" };
  function addButton(figure, picture, open) {
    if (figure.dataset.zoom || !picture) return;
    figure.dataset.zoom = "1";
    var lang = (document.documentElement.lang || "en").slice(0, 2);
    var button = document.createElement("button");
    button.type = "button";
    button.className = "figure-open";
    button.textContent = LABEL[lang] || LABEL.en;
    button.addEventListener("click", function () { open(figure); });
    var bar = document.createElement("div");
    bar.className = "figure-actions";
    bar.appendChild(button);
    picture.insertAdjacentElement("afterend", bar);
    // a pointer can still tap the picture itself; the keyboard has the button
    picture.addEventListener("click", function () { open(figure); });
  }
  function setUp() {
    document.querySelectorAll("figure.diagram").forEach(function (figure) {
      addButton(figure, figure.querySelector("svg"), openDiagram);
    });
    document.querySelectorAll("figure.built-figure").forEach(function (figure) {
      addButton(figure, figure.querySelector(":scope > img"), openImage);
    });
  }
  if (typeof document$ !== "undefined") document$.subscribe(setUp);
  else document.addEventListener("DOMContentLoaded", setUp);
})();

// A box that scrolls sideways (a wide table, a wide formula) can be reached and
// scrolled with the keyboard: it takes the focus while its content overflows it,
// and says what it is. Checked again when the window's width changes.
(function () {
  var NAME = { en: "Scrollable", zh: "可横向滚动" };
  // tables, display formulas, and a notebook's code and output (mkdocs-jupyter)
  var SCROLLERS = ".md-typeset__scrollwrap, .katex-display, .jupyter-wrapper .highlight-ipynb,"
    + " .jupyter-wrapper .jp-OutputArea-output, .jupyter-wrapper .jp-OutputArea-output pre";
  function mark() {
    var lang = (document.documentElement.lang || "en").slice(0, 2);
    document.querySelectorAll(SCROLLERS).forEach(function (box) {
      var wide = box.scrollWidth > box.clientWidth + 1;
      if (wide && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", NAME[lang] || NAME.en);
        box.dataset.scrollFocus = "1";
      } else if (!wide && box.dataset.scrollFocus) {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
        delete box.dataset.scrollFocus;
      }
    });
  }
  var pending = 0;
  function later() {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(mark);
  }
  window.addEventListener("resize", later);
  window.addEventListener("load", later);
  if (typeof document$ !== "undefined") document$.subscribe(later);
  else document.addEventListener("DOMContentLoaded", later);
})();


// A lab's copy buttons (mkdocs-jupyter's <clipboard-copy>) show "Copied!" for a second
// after a click, a word of their name (site_tools/hooks.py) that a screen reader
// hears only on the focused button: this polite live region says it as it happens.
(function () {
  var SAID = { en: "Copied to clipboard", zh: "已复制" };
  var region = null;
  function setUp() {
    if (region || !document.querySelector("clipboard-copy")) return;
    region = document.createElement("div");
    region.className = "a11y-visually-hidden";
    region.setAttribute("role", "status");
    document.body.appendChild(region);
  }
  document.addEventListener("clipboard-copy", function () {
    if (!region) return;
    var lang = (document.documentElement.lang || "en").slice(0, 2);
    region.textContent = "";
    setTimeout(function () { region.textContent = SAID[lang] || SAID.en; }, 100);
  });
  if (typeof document$ !== "undefined") document$.subscribe(setUp);
  else document.addEventListener("DOMContentLoaded", setUp);
})();
