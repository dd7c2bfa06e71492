// The run list of runner serve: on each "change" event, fetch the list
// again and put it in place of the old one.
(() => {
  "use strict";
  let busy = false, again = false;
  const state = (s) => { document.getElementById("live-state").textContent = s; };
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const r = await fetch(location.pathname, { credentials: "same-origin", cache: "no-store" });
      if (r.ok) {
        const doc = new DOMParser().parseFromString(await r.text(), "text/html");
        document.getElementById("list").replaceWith(document.adoptNode(doc.getElementById("list")));
      }
    } catch (e) {
      state("cannot reach runner serve");
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }
  const es = new EventSource(document.body.dataset.events);
  es.addEventListener("change", refresh);
  es.onopen = () => state("live");
  es.onerror = () => state("reconnecting…");
})();
