// The live run page of runner serve: on each "change" event of the run's
// stream, fetch the page again and put its header and main in place of
// the old ones, keeping what the reader opened, closed, chose and typed.
// Answer forms post to the server with the page's CSRF token. Every
// request carries the token this origin keeps (see boot.js) as a header.
(() => {
  "use strict";
  const auth = () => ({ Authorization: "Bearer " + (localStorage.getItem("runner-serve-token") || "") });
  const body = document.body;
  let state = "live";
  let busy = false, again = false;

  function setState(s) {
    state = s;
    const el = document.getElementById("live-state");
    if (el) el.textContent = s;
  }

  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const r = await fetch(location.pathname, { headers: auth(), cache: "no-store" });
      if (r.ok) swap(new DOMParser().parseFromString(await r.text(), "text/html"));
    } catch (e) {
      setState("cannot reach runner serve");
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }

  function swap(doc) {
    const open = new Map();
    for (const d of document.querySelectorAll("details[id]")) open.set(d.id, d.open);
    const forms = new Map();
    for (const f of document.querySelectorAll("form.answer")) forms.set(f.dataset.label + "#" + f.dataset.visit, f);
    const checked = document.querySelector("input.fr:checked");
    for (const sel of ["header", "main"]) {
      const now = document.querySelector(sel), next = doc.querySelector(sel);
      if (now && next) now.replaceWith(document.adoptNode(next));
    }
    for (const d of document.querySelectorAll("details[id]")) {
      if (open.has(d.id)) d.open = open.get(d.id);
    }
    // A form still asked keeps what was typed into it.
    for (const f of document.querySelectorAll("form.answer")) {
      const old = forms.get(f.dataset.label + "#" + f.dataset.visit);
      if (old) f.replaceWith(old);
    }
    if (checked) {
      const c = document.getElementById(checked.id);
      if (c) c.checked = true;
    }
    document.title = doc.title;
    body.dataset.seq = doc.body.dataset.seq;
    setState(state);
    bind();
  }

  async function submit(ev) {
    ev.preventDefault();
    const f = ev.currentTarget;
    const out = f.querySelector(".answer-result");
    out.classList.remove("bad");
    out.textContent = "sending…";
    let reply;
    try {
      const r = await fetch(location.pathname + "/answer", {
        method: "POST",
        headers: { ...auth(), "X-Runner-CSRF": body.dataset.csrf },
        body: new URLSearchParams(new FormData(f)),
      });
      reply = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
    } catch (e) {
      reply = { error: "cannot reach runner serve: " + e };
    }
    out.textContent = reply.error || reply.message;
    if (reply.error) out.classList.add("bad");
    else f.dataset.answered = "1";
    refresh();
  }

  // An action (start, stop, resume, fork) posts its form to its URL; one
  // that made a run (a start, a fork) goes to that run's page.
  async function act(ev) {
    ev.preventDefault();
    const f = ev.currentTarget;
    const out = f.querySelector(".action-result") || f.parentElement.querySelector(".action-result");
    const say = (text, bad) => {
      if (!out) return;
      out.textContent = text;
      out.classList.toggle("bad", !!bad);
    };
    say("sending…");
    for (const b of f.querySelectorAll("button")) b.disabled = true;
    let reply;
    try {
      const r = await fetch(f.dataset.action, {
        method: "POST",
        headers: { ...auth(), "X-Runner-CSRF": body.dataset.csrf },
        body: new URLSearchParams(new FormData(f)),
      });
      reply = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
    } catch (e) {
      reply = { error: "cannot reach runner serve: " + e };
    }
    for (const b of f.querySelectorAll("button")) b.disabled = false;
    say(reply.error || reply.message, !!reply.error);
    if (!reply.error && reply.url) {
      location.href = reply.url;
      return;
    }
    if (body.dataset.events) refresh();
  }

  function bind() {
    for (const f of document.querySelectorAll("form.answer")) {
      if (f.dataset.bound) continue;
      f.dataset.bound = "1";
      f.addEventListener("submit", submit);
    }
    for (const f of document.querySelectorAll("form.action")) {
      if (f.dataset.bound) continue;
      f.dataset.bound = "1";
      f.addEventListener("submit", act);
    }
  }

  bind();
  // The run's server-sent events, read through fetch: an EventSource
  // cannot send the header. A lost stream is opened again from where the
  // page stands.
  async function follow() {
    for (;;) {
      try {
        const r = await fetch(body.dataset.events + "?seq=" + encodeURIComponent(body.dataset.seq || "-1"), {
          headers: { ...auth(), Accept: "text/event-stream" },
          cache: "no-store",
        });
        if (r.status === 401) { setState("refused: open the URL runner serve printed"); return; }
        if (r.ok && r.body) {
          setState("live");
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
      setState("reconnecting…");
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }

  if (body.dataset.events) follow();
})();
