// A long report's closed steps are not in the page's DOM when it opens:
// each run of them is their markup (made and escaped by runner's
// html/template, so no byte of it comes from the run unescaped),
// gzipped and base64-encoded as the text of a script element that does
// not run, turned into elements here when it nears the screen or when a
// link or the address asks for a step in it. The parsing is the
// browser's, into an inert <template>; nothing here builds markup out of
// data.
(() => {
  "use strict";
  const boxes = new Set(document.querySelectorAll("div.lazy"));
  const shown = new Map();
  const show = (box) => {
    if (!shown.has(box)) {
      shown.set(box, (async () => {
        const bin = atob(box.querySelector("script").textContent);
        const bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        const gz = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        const t = document.createElement("template");
        t.innerHTML = await new Response(gz).text();
        boxes.delete(box);
        box.replaceWith(t.content);
      })());
    }
    return shown.get(box);
  };
  const holder = (id) => {
    if (!id || document.getElementById(id)) return null;
    for (const box of boxes) if (box.dataset.ids.split(" ").includes(id)) return box;
    return null;
  };
  // reveal opens the step with this id (a link to a closed step opens it)
  // and the sections around it, bringing it into the page first if it is
  // not there yet.
  const reveal = async (id) => {
    const box = holder(id);
    if (box) await show(box);
    const el = id && document.getElementById(id);
    if (!el) return;
    for (let e = el; e; e = e.parentElement) if (e.tagName === "DETAILS") e.open = true;
    if (box) el.scrollIntoView();
  };
  const idOf = (hash) => {
    try { return decodeURIComponent(hash.slice(1)); } catch (e) { return ""; } // a malformed address names no step
  };
  document.addEventListener("click", (ev) => {
    const a = ev.target.closest && ev.target.closest('a[href^="#"]');
    if (!a || !holder(idOf(a.hash))) return;
    // The step is not in the page yet: show it, then go to it.
    ev.preventDefault();
    reveal(idOf(a.hash)).then(() => { if (location.hash !== a.hash) location.hash = a.hash; });
  });
  addEventListener("hashchange", () => reveal(idOf(location.hash)));
  reveal(idOf(location.hash));
  const io = new IntersectionObserver((es) => {
    for (const e of es) if (e.isIntersecting) { io.unobserve(e.target); show(e.target); }
  }, { rootMargin: "1500px 0px" });
  for (const box of boxes) io.observe(box);
})();
