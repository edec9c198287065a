// A diagram (an inline SVG in <figure class="diagram">) opens full-size on tap,
// in the same lightbox as the built figures (GLightbox, from mkdocs-glightbox).
// Inline, not an <img>, so that it keeps following the light/dark toggle.
(function () {
  function open(figure) {
    var svg = figure.querySelector("svg");
    if (!svg || typeof GLightbox === "undefined") return;
    var width = svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
    var copy = svg.cloneNode(true);
    if (width) copy.style.width = width + "px";
    copy.style.maxWidth = "none";
    var box = document.createElement("div");
    box.className = "diagram diagram-zoom";
    box.appendChild(copy);
    var caption = figure.querySelector("figcaption");
    GLightbox({
      elements: [{
        content: box,
        width: "100vw",
        height: "auto",
        description: caption ? caption.innerHTML : "",
      }],
      touchNavigation: true,
      loop: false,
    }).open();
  }
  function setUp() {
    document.querySelectorAll("figure.diagram").forEach(function (figure) {
      if (figure.dataset.zoom) return;
      figure.dataset.zoom = "1";
      figure.setAttribute("tabindex", "0");
      figure.setAttribute("role", "button");
      figure.setAttribute("aria-label", "Open the diagram full-size");
      figure.addEventListener("click", function () { open(figure); });
      figure.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          open(figure);
        }
      });
    });
  }
  if (typeof document$ !== "undefined") document$.subscribe(setUp);
  else document.addEventListener("DOMContentLoaded", setUp);
})();
