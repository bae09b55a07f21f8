// bbengine web UI: live updates of the sessions list (server-sent
// events) and keyboard navigation. The pages work without it.
"use strict";
(function () {
  const body = document.body;

  // Live: on "change", fetch this page's rows again and swap them in.
  const live = body.dataset.live;
  const frag = body.dataset.frag;
  const rows = document.getElementById("rows");
  if (live && frag && rows && window.EventSource) {
    const dot = document.getElementById("live");
    const es = new EventSource(live);
    // The stream starts at the version it reads now: when that is not
    // the version the page was rendered at, something changed between.
    es.addEventListener("hello", function (ev) {
      if (dot) dot.hidden = false;
      if (ev.data !== body.dataset.version) refresh();
    });
    es.addEventListener("change", refresh);
    es.onerror = function () { if (dot) dot.hidden = true; };
    let busy = false, again = false;
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      fetch(frag, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) {
          if (!r.ok) return Promise.reject(r.status);
          const count = document.getElementById("count");
          const summary = r.headers.get("X-Bb-Summary");
          if (count && summary) count.textContent = summary;
          return r.text();
        })
        .then(function (html) {
          const doc = new DOMParser().parseFromString("<table><tbody>" + html + "</tbody></table>", "text/html");
          const fresh = doc.querySelector("tbody");
          const before = new Set(Array.from(rows.querySelectorAll("tr.row")).map(function (tr) { return tr.dataset.id; }));
          const next = Array.from(fresh.children);
          next.forEach(function (tr) { if (tr.dataset.id && !before.has(tr.dataset.id)) tr.classList.add("new"); });
          rows.replaceChildren.apply(rows, next);
        })
        .catch(function () {})
        .finally(function () { busy = false; if (again) { again = false; refresh(); } });
    }
  }

  // Keyboard: j/k move through events (or session rows), Enter opens a
  // row, / focuses the search box.
  function items() {
    return Array.from(document.querySelectorAll("li.ev, li.frame, tr.row"));
  }
  let cur = -1;
  function move(d) {
    const xs = items();
    if (!xs.length) return;
    const at = xs.findIndex(function (x) { return x.classList.contains("cur"); });
    cur = at < 0 ? (d > 0 ? 0 : xs.length - 1) : Math.min(xs.length - 1, Math.max(0, at + d));
    xs.forEach(function (x) { x.classList.remove("cur"); });
    xs[cur].classList.add("cur");
    xs[cur].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (ev) {
    const t = ev.target;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) {
      if (ev.key === "Escape") t.blur();
      return;
    }
    if (ev.key === "j") { move(1); ev.preventDefault(); }
    else if (ev.key === "k") { move(-1); ev.preventDefault(); }
    else if (ev.key === "/") {
      const q = document.getElementById("q") || document.getElementById("find");
      if (q) { q.focus(); q.select(); ev.preventDefault(); }
    } else if (ev.key === "Enter" || ev.key === "o") {
      const c = document.querySelector(".cur");
      if (!c) return;
      const a = c.querySelector("a.sid, a.rtitle, a.aid, a.frames, details > summary");
      if (a) { a.click(); ev.preventDefault(); }
    }
  });
})();
