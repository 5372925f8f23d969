/* The theme's controls, adjusted for WCAG 2.1 (tools/book_site.py adds this file to every page).
 *
 * 2.5.3 Label in Name: a control's accessible name must contain the words it shows, so that
 * a speech user can say what they see. The theme labels its search field "Search" while it
 * shows "Search Ctrl+K", and myst-nb labels "Show code cell source" as "Toggle hidden
 * content": the label is dropped and the visible words name the control. Icons inside a
 * labelled control are decorative (their glyphs and titles are not its name: the colour
 * mode button, labelled "Color mode", showed the titles "Light", "Dark"). */
(() => {
  const words = (text) => (text || "").replace(/\s+/g, " ").trim().toLowerCase();
  const CONTROLS = "button, a, summary, [role='button'], [role='link'], [role='tab'], [role='menuitem']";

  function labelInName(root) {
    for (const control of root.querySelectorAll(`:is(${CONTROLS})[aria-label]`)) {
      for (const icon of control.querySelectorAll("i, svg, img:not([alt])")) {
        icon.setAttribute("aria-hidden", "true");
        // Font Awesome turns an icon's title into an SVG <title>, read as the control's text.
        icon.removeAttribute("title");
        for (const title of icon.querySelectorAll("title")) title.remove();
        icon.removeAttribute("aria-labelledby");
      }
      const shown = words(control.innerText);
      if (shown && !words(control.getAttribute("aria-label")).includes(shown)) {
        control.removeAttribute("aria-label");
      }
    }
  }

  /* Graphviz drawings of Sphinx's graphviz directive are <object>s whose fallback text is the
   * directive's :alt:; give the object that text as its name (WCAG 1.1.1). */
  function drawingNames(root) {
    for (const drawing of root.querySelectorAll("object[type='image/svg+xml']")) {
      const alt = words(drawing.textContent) && drawing.textContent.replace(/\s+/g, " ").trim();
      if (alt && !drawing.hasAttribute("aria-label")) {
        drawing.setAttribute("role", "img");
        drawing.setAttribute("aria-label", alt);
      }
    }
  }

  function adjust() {
    labelInName(document);
    drawingNames(document);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", adjust);
  else adjust();
  // Font Awesome replaces the <i> icons by SVGs after loading: adjust those too.
  window.addEventListener("load", adjust);
})();
