// The script of a page of runner serve refused for want of the token.
// The token is kept in this origin's localStorage, which no other port
// of this host can read (a cookie would be sent to every port), and goes
// to the server only as the header the page's scripts add. Given in the
// address (#token=…, where the server's redirect puts it), it is stored
// and taken off the address bar; then the page is fetched with it and
// written in place of the refusal. Without a token, the refusal stays.
(() => {
  "use strict";
  const key = "runner-serve-token";
  const m = /^#token=([^&]*)/.exec(location.hash);
  if (m) {
    localStorage.setItem(key, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  const token = localStorage.getItem(key);
  if (!token) return;
  (async () => {
    const r = await fetch(location.pathname + location.search, {
      headers: { Authorization: "Bearer " + token },
      cache: "no-store",
    });
    if (r.status === 401) {
      // A token of an earlier runner serve on this port.
      localStorage.removeItem(key);
      return;
    }
    const html = await r.text();
    document.open();
    document.write(html);
    document.close();
  })();
})();
