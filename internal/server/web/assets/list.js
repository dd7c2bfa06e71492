// The run list of runner serve: on each "change" event, fetch the list
// again and put it in place of the old one. Every request carries the
// token this origin keeps (see boot.js) as a header.
(() => {
  "use strict";
  const auth = () => ({ Authorization: "Bearer " + (localStorage.getItem("runner-serve-token") || "") });
  let busy = false, again = false;
  const state = (s) => { document.getElementById("live-state").textContent = s; };
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const r = await fetch(location.pathname + location.search, { headers: auth(), cache: "no-store" });
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
  // The list's server-sent events, read through fetch: an EventSource
  // cannot send the header.
  async function follow() {
    for (;;) {
      try {
        const r = await fetch(document.body.dataset.events, {
          headers: { ...auth(), Accept: "text/event-stream" },
          cache: "no-store",
        });
        if (r.status === 401) { state("refused: open the URL runner serve printed"); return; }
        if (r.ok && r.body) {
          state("live");
          const rd = r.body.pipeThrough(new TextDecoderStream()).getReader();
          let buf = "";
          for (;;) {
            const { value, done } = await rd.read();
            if (done) break;
            buf += value;
            for (let i; (i = buf.indexOf("\n\n")) >= 0; buf = buf.slice(i + 2)) {
              if (/^event: change$/m.test(buf.slice(0, i))) refresh();
            }
          }
        }
      } catch (e) {
        // the server went away: try again below
      }
      state("reconnecting…");
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
  follow();
})();
