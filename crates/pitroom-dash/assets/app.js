// Pitroom's dashboard page. Views: Live (#/), a run (#/run/<id>), History (#/history),
// Stats (#/stats). Changes arrive as server-sent events (/api/events); the page never polls —
// its only timer ticks the clocks on running cards. Everything is built with DOM calls and
// textContent: no innerHTML, so no served text can become markup.
(function () {
  "use strict";

  var TOKEN = (document.querySelector('meta[name="pitroom-token"]') || {}).content || "";
  var main = document.getElementById("main");
  var H = window.PitroomHighlight;
  var MD = window.PitroomMarkdown;

  var state = {
    cards: new Map(),
    feed: null,
    epoch: null,
    es: null,
    route: null,
    run: null,
    live: false,
    firstRender: false,
    pushes: []
  };
  // Read by the browser tests: when the Live view first rendered, and when pushes landed.
  window.__pitroom = state;

  // ---- DOM helpers -------------------------------------------------------------------------

  function h(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? "" : v);
      });
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }

  function add(parent, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(parent, c); }); return; }
    parent.append(child instanceof Node ? child : String(child));
  }

  var SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]); });
    for (var i = 2; i < arguments.length; i++) if (arguments[i]) e.append(arguments[i]);
    return e;
  }

  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

  function toast(message, bad) {
    var t = document.getElementById("toast");
    t.textContent = message;
    t.className = "toast" + (bad ? " bad" : "");
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.hidden = true; }, bad ? 8000 : 4000);
  }

  // ---- formatting --------------------------------------------------------------------------

  function ms(iso) { var t = Date.parse(iso); return isNaN(t) ? null : t; }

  // A duration; `precise` shows tenths under ten seconds (a finished run), a ticking clock
  // shows whole seconds.
  function dur(msv, precise) {
    if (msv === null || msv === undefined) return "–";
    if (precise && msv < 9950) return (Math.max(0, msv) / 1000).toFixed(1) + "s";
    var sec = Math.max(0, Math.round(msv / 1000));
    if (sec < 60) return sec + "s";
    var m = Math.floor(sec / 60), r = sec % 60;
    if (m < 60) return m + "m " + String(r).padStart(2, "0") + "s";
    return Math.floor(m / 60) + "h " + String(m % 60).padStart(2, "0") + "m";
  }

  function tokens(n) {
    if (n === null || n === undefined) return "–";
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
    return String(n);
  }

  function money(x) {
    if (x === null || x === undefined) return "n/a";
    if (x === 0) return "$0";
    return "$" + (Math.abs(x) < 0.01 ? x.toFixed(4) : x.toFixed(2));
  }

  function ago(iso) {
    var t = ms(iso);
    if (t === null) return "";
    var d = (Date.now() - t) / 1000;
    if (d < 60) return "just now";
    if (d < 3600) return Math.floor(d / 60) + " min ago";
    if (d < 86400) return Math.floor(d / 3600) + " h ago";
    return new Date(t).toISOString().slice(0, 10);
  }

  function pct(x) { return x === null || x === undefined ? "–" : Math.round(x * 100) + "%"; }

  function firstLine(text) { return String(text || "").split("\n")[0]; }

  // ---- server ------------------------------------------------------------------------------

  function api(path) {
    return fetch(path, { headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) throw new Error(body.error || ("the dashboard answered " + r.status));
        return body;
      });
    });
  }

  function act(id, action) {
    return fetch("/api/run/" + encodeURIComponent(id) + "/" + action, {
      method: "POST",
      headers: { "x-pitroom-token": TOKEN, Accept: "application/json" }
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) throw new Error(body.error || ("refused (" + r.status + ")"));
        return body;
      });
    });
  }

  function doAction(id, action, button) {
    if (button) { button.disabled = true; button.textContent = action === "stop" ? "Stopping…" : "Discarding…"; }
    return act(id, action).then(function (body) {
      if (body.card) upsert(body.card);
      toast(action === "stop" ? "Run " + id + (body.stopping ? " is stopping" : " stopped") : "Copy of " + id + " discarded; its patch is kept");
    }).catch(function (e) {
      toast(e.message, true);
      if (button) { button.disabled = false; button.textContent = action === "stop" ? "Stop" : "Discard"; }
    });
  }

  function setConn(ok) {
    var c = document.getElementById("conn");
    c.textContent = ok ? "● live" : "○ reconnecting…";
    c.className = "conn " + (ok ? "ok" : "bad");
  }

  // One event stream for the page's life; the browser reconnects by itself and sends the
  // last id it saw (Last-Event-ID), and the server replays what was missed.
  function connect(after) {
    if (state.es) state.es.close();
    var es = new EventSource("/api/events" + (after ? "?after=" + encodeURIComponent(after) : ""));
    es.addEventListener("hello", function (ev) {
      var epoch = JSON.parse(ev.data).feed;
      // Another server start: its token is new, so the page must be too.
      if (state.epoch && state.epoch !== epoch) { location.reload(); return; }
      state.epoch = epoch;
      setConn(true);
    });
    es.addEventListener("card", function (ev) {
      var card = JSON.parse(ev.data);
      upsert(card);
      state.pushes.push({ id: card.id, steps: card.steps, tools: card.tools, state: card.state, at: Date.now() });
      if (state.pushes.length > 500) state.pushes.shift();
    });
    es.addEventListener("gone", function (ev) {
      state.cards.delete(JSON.parse(ev.data).id);
      scheduleLive();
    });
    es.addEventListener("reset", function () { es.close(); loadLive(); });
    es.onerror = function () { setConn(false); };
    state.es = es;
  }

  function loadLive() {
    return api("/api/live").then(function (snap) {
      var before = state.cards;
      state.cards = new Map(snap.cards.map(function (c) { return [c.id, c]; }));
      // A run that ended while the stream was away is news too.
      if (before) state.cards.forEach(function (c) { noteEnd(before.get(c.id), c); });
      state.total = snap.total;
      state.feed = snap.feed;
      state.epoch = snap.feed.split(".")[0];
      state.live = true;
      connect(snap.feed);
      if (state.route && state.route.name === "live") renderLive();
    }).catch(function (e) {
      if (state.route && state.route.name === "live") showError(e);
    });
  }

  function upsert(card) {
    // Whichever way the change came (the stream, or the answer to the page's own Stop).
    noteEnd(state.cards.get(card.id), card);
    state.cards.set(card.id, card);
    if (!state.route) return;
    if (state.route.name === "live") scheduleLive();
    if (state.route.name === "run" && state.route.id === card.id) scheduleRun();
  }

  var liveFrame = 0;
  function scheduleLive() {
    if (liveFrame) return;
    liveFrame = requestAnimationFrame(function () { liveFrame = 0; if (state.route.name === "live") renderLive(); });
  }

  var runTimer = 0;
  // A pushed change to the open run: fetch its page again (once per burst of changes).
  function scheduleRun() {
    if (runTimer) return;
    runTimer = setTimeout(function () { runTimer = 0; if (state.route.name === "run") loadRun(state.route.id, true); }, 60);
  }

  // ---- router ------------------------------------------------------------------------------

  function parseRoute() {
    var hash = location.hash.replace(/^#/, "") || "/";
    var q = hash.indexOf("?");
    var path = q >= 0 ? hash.slice(0, q) : hash;
    var params = new URLSearchParams(q >= 0 ? hash.slice(q + 1) : "");
    var m = /^\/run\/([a-z0-9-]+)$/.exec(path);
    if (m) return { name: "run", id: m[1], params: params };
    if (path === "/history") return { name: "history", params: params };
    if (path === "/stats") return { name: "stats", params: params };
    return { name: "live", params: params };
  }

  function route() {
    var previous = state.route;
    state.route = parseRoute();
    document.querySelectorAll("[data-nav]").forEach(function (a) {
      var on = a.getAttribute("data-nav") === state.route.name;
      if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    });
    if (!previous || previous.name !== state.route.name || previous.id !== state.route.id) window.scrollTo(0, 0);
    if (state.route.name === "live") { if (state.live) renderLive(); else clear(main).append(h("p", { class: "muted" }, "Loading runs…")); }
    else if (state.route.name === "run") loadRun(state.route.id, false);
    else if (state.route.name === "history") renderHistory();
    else if (state.route.name === "stats") renderStats();
  }

  function showError(e) {
    clear(main).append(h("div", { class: "panel error-panel", role: "alert" }, h("h2", { text: "Something went wrong" }), h("p", { text: e.message })));
  }

  function setTitle(t) { document.title = t ? t + " · Pitroom" : "Pitroom"; }

  // ---- Live --------------------------------------------------------------------------------

  var ORDER = { running: 0, queued: 1 };
  function byActivity(a, b) {
    var x = ORDER[a.state] !== undefined ? ORDER[a.state] : 2;
    var y = ORDER[b.state] !== undefined ? ORDER[b.state] : 2;
    return x - y || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
  }

  function badge(st) { return h("span", { class: "badge st-" + st, text: st }); }

  // A queued run waiting out a rate limit says so, and until when.
  function cardBadge(card) { return card.held_until ? h("span", { class: "badge st-queued", text: "held" }) : badge(card.state); }

  function timer(card) {
    var t = h("span", { class: "timer" });
    if (card.stoppable) {
      var from = card.state === "running" ? card.started_at || card.created_at : card.created_at;
      t.setAttribute("data-since", String(ms(from) || Date.now()));
      t.setAttribute("data-prefix", card.state === "queued" ? "queued " : "");
      tick(t);
    } else {
      t.textContent = dur(card.duration_ms, true);
    }
    return t;
  }

  function tick(t) {
    t.textContent = t.getAttribute("data-prefix") + dur(Date.now() - Number(t.getAttribute("data-since")));
  }

  function actionButtons(card) {
    var out = [];
    if (card.stoppable) out.push(h("button", { class: "btn danger", type: "button", "data-action": "stop", "data-id": card.id, onclick: function (e) { doAction(card.id, "stop", e.currentTarget); } }, "Stop"));
    if (card.discardable) out.push(h("button", { class: "btn", type: "button", "data-action": "discard", "data-id": card.id, onclick: function (e) { doAction(card.id, "discard", e.currentTarget); } }, "Discard"));
    return out;
  }

  function cardView(card) {
    var calls = card.tools + (card.tools === 1 ? " tool" : " tools");
    var marks = [];
    if (card.failed_calls) marks.push(card.failed_calls + " failed");
    if (card.denied_calls) marks.push(card.denied_calls + " denied");
    var line;
    if (card.stoppable) line = h("p", { class: "last" }, h("span", { class: "muted" }, card.last ? "› " : ""), card.last || (card.held_until ? "held until " + card.held_until + ": every target is cooling down after a rate limit" : card.state === "queued" ? "waiting for a slot" : "starting…"));
    else if (card.error) line = h("p", { class: "last err" }, card.error);
    else if (card.summary) line = h("p", { class: "last" }, card.summary);
    var foot = [];
    if (card.changes) foot.push(card.changes + (card.changes === 1 ? " file changed" : " files changed"));
    if (card.refs) foot.push("refs " + card.refs);
    if (card.budget) foot.push("budget " + card.budget);
    if (card.saved) foot.push("saved " + money(card.saved));
    if (card.applied) foot.push("applied");
    if (card.discarded) foot.push("discarded");
    if (card.violation) foot.push("READ-ONLY VIOLATION");
    return h("article", { class: "card st-" + card.state, id: "card-" + card.id, "data-id": card.id },
      h("div", { class: "card-head" }, cardBadge(card), h("span", { class: "mode" }, card.mode), timer(card)),
      h("h3", { class: "task" }, h("a", { href: "#/run/" + card.id, title: card.task }, firstLine(card.task))),
      h("p", { class: "meta" }, card.worker, " · ", card.steps + (card.steps === 1 ? " step" : " steps"), " · ", calls, marks.length ? h("span", { class: "warn" }, " (" + marks.join(", ") + ")") : null),
      line,
      h("div", { class: "card-foot" }, h("span", { class: "muted small" }, foot.join(" · ")), h("span", { class: "actions" }, actionButtons(card)))
    );
  }

  function crewCounts(cards) {
    var c = { running: 0, queued: 0, done: 0, failed: 0 };
    cards.forEach(function (k) { if (c[k.state] !== undefined) c[k.state]++; else c.failed++; });
    return c;
  }

  function renderLive() {
    var focused = document.activeElement && document.activeElement.closest && document.activeElement.closest("[data-id]");
    var focusKey = focused ? [focused.getAttribute("data-id"), document.activeElement.getAttribute("data-action") || "link"] : null;
    setTitle("Live");
    var all = Array.from(state.cards.values()).sort(byActivity);
    var crews = new Map();
    var singles = [];
    all.forEach(function (c) {
      if (c.group) { if (!crews.has(c.group)) crews.set(c.group, []); crews.get(c.group).push(c); }
      else singles.push(c);
    });
    var running = all.filter(function (c) { return c.state === "running"; }).length;
    var queued = all.filter(function (c) { return c.state === "queued"; }).length;
    var frag = document.createDocumentFragment();
    frag.append(h("div", { class: "view-head" },
      h("h1", { text: "Live" }),
      h("p", { class: "muted" }, running + " running · " + queued + " queued · " + (state.total || all.length) + " runs in the state directory")));
    if (!all.length) {
      frag.append(h("div", { class: "panel empty" },
        h("p", {}, "No runs yet. Start one and it appears here as it happens:"),
        h("pre", { class: "code" }, 'pitroom --bg "Map the auth module"'),
        h("p", { class: "muted" }, "or try the scripted demo: ", h("code", { text: "pitroom demo --keep" }))));
    }
    var crewList = Array.from(crews.entries()).sort(function (a, b) { return byActivity(a[1][0], b[1][0]); });
    crewList.forEach(function (entry) {
      var name = entry[0], cards = entry[1];
      var c = crewCounts(cards);
      var active = cards.filter(function (k) { return k.stoppable; });
      var discardable = cards.filter(function (k) { return k.discardable; });
      var tools = [];
      if (active.length) tools.push(h("button", { class: "btn danger", type: "button", onclick: function () { active.forEach(function (k) { doAction(k.id, "stop"); }); } }, "Stop all"));
      if (discardable.length) tools.push(h("button", { class: "btn", type: "button", onclick: function () { discardable.forEach(function (k) { doAction(k.id, "discard"); }); } }, "Discard all"));
      frag.append(h("section", { class: "crew", "aria-label": "Crew " + name },
        h("div", { class: "crew-head" },
          h("h2", {}, h("span", { class: "muted" }, "crew "), name),
          h("span", { class: "counts" }, cards.length + " runs: ", c.running + " running, " + c.queued + " queued, " + c.done + " done, " + c.failed + " not done"),
          h("span", { class: "actions" }, tools)),
        h("div", { class: "cards" }, cards.map(cardView))));
    });
    if (singles.length) {
      frag.append(h("section", { "aria-label": "Runs" },
        crewList.length ? h("h2", { class: "section-title", text: "Runs" }) : null,
        h("div", { class: "cards" }, singles.map(cardView))));
    }
    clear(main).append(frag);
    if (focusKey) {
      var again = main.querySelector('[data-id="' + focusKey[0] + '"] ' + (focusKey[1] === "link" ? "a" : '[data-action="' + focusKey[1] + '"]'));
      if (again) again.focus();
    }
    // When each pushed change was on screen (the browser tests read it).
    var now = Date.now();
    state.pushes.forEach(function (p) { if (!p.shown) p.shown = now; });
    if (!state.firstRender) {
      state.firstRender = performance.now();
      document.body.setAttribute("data-live-rendered", "1");
    }
  }

  setInterval(function () {
    document.querySelectorAll(".timer[data-since]").forEach(tick);
  }, 1000);

  // ---- a run -------------------------------------------------------------------------------

  function loadRun(id, quiet) {
    if (!quiet) clear(main).append(h("p", { class: "muted" }, "Loading run " + id + "…"));
    return api("/api/run/" + encodeURIComponent(id)).then(function (d) {
      if (state.route.name !== "run" || state.route.id !== id) return;
      var y = window.scrollY;
      renderRun(d);
      if (quiet) window.scrollTo(0, y);
    }).catch(showError);
  }

  function section(title, body, extra) {
    return h("section", { class: "panel", "aria-label": title }, h("h2", {}, title, extra ? h("span", { class: "muted small" }, " ", extra) : null), body);
  }

  function kv(pairs) {
    return h("dl", { class: "kv" }, pairs.filter(function (p) { return p[1] !== null && p[1] !== undefined && p[1] !== ""; }).map(function (p) {
      return [h("dt", { text: p[0] }), h("dd", {}, p[1])];
    }));
  }

  function renderRun(d) {
    var r = d.record, c = d.card, spec = r.spec;
    setTitle(firstLine(spec.task).slice(0, 60));
    var frag = document.createDocumentFragment();
    frag.append(h("p", { class: "crumbs" }, h("a", { href: "#/" }, "← Live"), c.group ? [" · crew ", h("strong", { text: c.group })] : null));
    var head = h("div", { class: "run-head" },
      h("div", { class: "run-title" }, badge(c.state), h("span", { class: "mode" }, spec.mode), timer(c), h("span", { class: "actions" }, actionButtons(c))),
      h("h1", { class: "task-title", text: firstLine(spec.task) }));
    if (spec.task.indexOf("\n") >= 0 || spec.task.length > 160) head.append(h("details", { class: "full-task" }, h("summary", {}, "Full task"), h("pre", { class: "wrap", text: spec.task })));
    frag.append(head);
    if (r.read_only_violation) frag.append(h("div", { class: "banner bad", role: "alert" }, "READ-ONLY VIOLATION: the worker changed its read copy. Nothing reached your tree."));
    if (r.error) frag.append(h("div", { class: "banner bad" }, r.error));
    frag.append(section("Run", kv([
      ["Worker", c.worker], ["Directory", spec.dir], ["Run", r.id], ["Started", r.started_at ? new Date(r.started_at).toLocaleString() + " (" + ago(r.started_at) + ")" : "not yet"],
      ["Time", r.duration_ms !== null && r.duration_ms !== undefined ? dur(r.duration_ms, true) : null], ["Queued", r.queued_ms >= 100 ? dur(r.queued_ms, true) : null],
      ["Budget", c.budget], ["Session", r.session], ["Follows up", spec.parent ? h("a", { href: "#/run/" + spec.parent, text: spec.parent }) : null],
      ["Next", d.follow_up.length ? h("div", { class: "cmds" }, d.follow_up.map(function (cmd) { return h("code", { text: cmd }); })) : null]
    ])));
    if (r.answer) {
      var ans = h("div", { class: "md" });
      ans.append(MD.render(r.answer));
      frag.append(section("Answer", ans));
    }
    frag.append(changesSection(r, d));
    frag.append(stepsSection(d, r));
    if (r.refs) frag.append(refsSection(r.refs));
    frag.append(receiptSection(r));
    if (r.attempts && r.attempts.length) frag.append(attemptsSection(r.attempts));
    if (r.verify) frag.append(verifySection(r.verify));
    var warnings = (r.warnings || []).slice();
    (r.unreported || []).forEach(function (p) { warnings.push("changed but never mentioned by the worker: " + p); });
    if (warnings.length) frag.append(section("Warnings", h("ul", { class: "warnings" }, warnings.map(function (w) { return h("li", { text: w }); }))));
    frag.append(safetySection(r.safety));
    clear(main).append(frag);
  }

  function changesSection(r, d) {
    var files = r.changes || [];
    var note = [];
    if (r.applied) note.push("applied to your tree");
    if (r.discarded) note.push("copy discarded");
    if (r.reverted) note.push("reverted");
    if (!files.length && !d.patch) return section("Changes", h("p", { class: "muted" }, r.state === "running" || r.state === "queued" ? "Changes are listed when the run ends." : "No files changed."));
    var list = h("ul", { class: "files" }, files.map(function (f) {
      return h("li", {}, h("span", { class: "fstat fs-" + f.status, text: f.status }), " ",
        f.old_path ? h("span", { class: "muted" }, f.old_path + " → ") : null, h("code", { text: f.path }), " ",
        h("span", { class: "add", text: f.added !== null && f.added !== undefined ? "+" + f.added : "" }), " ",
        h("span", { class: "del", text: f.deleted !== null && f.deleted !== undefined ? "−" + f.deleted : "" }));
    }));
    var body = [list];
    if (d.patch) body.push(diffView(d.patch));
    if (d.patch_truncated) body.push(h("p", { class: "muted" }, "The patch is longer than shown: pitroom show " + r.id + " --patch has all of it."));
    return section("Changes", body, files.length + (files.length === 1 ? " file" : " files") + (note.length ? " · " + note.join(", ") : ""));
  }

  // The unified patch, file by file, each line highlighted by the file's language.
  function parsePatch(patch) {
    var files = [];
    var cur = null;
    patch.split("\n").forEach(function (line) {
      if (line.startsWith("diff --git ")) {
        var m = /^diff --git a\/(.*?) b\/(.*)$/.exec(line);
        cur = { path: m ? m[2] : line.slice(11), head: [], lines: [], binary: false };
        files.push(cur);
        return;
      }
      if (!cur) return;
      if (!cur.lines.length && !line.startsWith("@@")) {
        if (line.startsWith("+++ ") && line !== "+++ /dev/null") cur.path = line.slice(4).replace(/^b\//, "");
        if (/^Binary files|^GIT binary patch/.test(line)) cur.binary = true;
        cur.head.push(line);
        return;
      }
      cur.lines.push(line);
    });
    return files;
  }

  var DIFF_LINE_LIMIT = 1500;

  function diffView(patch) {
    var wrap = h("div", { class: "diffs" });
    parsePatch(patch).forEach(function (f) {
      var lang = H.langFor(f.path);
      var table = h("table", { class: "diff" });
      var tbody = h("tbody");
      var oldN = 0, newN = 0, st = { old: null, new: null }, shown = 0;
      var adds = 0, dels = 0;
      f.lines.forEach(function (line) {
        if (line.startsWith("+")) adds++; else if (line.startsWith("-")) dels++;
      });
      for (var i = 0; i < f.lines.length; i++) {
        var line = f.lines[i];
        if (shown++ >= DIFF_LINE_LIMIT) { tbody.append(h("tr", { class: "hunk" }, h("td", { colspan: "3", text: "… " + (f.lines.length - DIFF_LINE_LIMIT) + " more lines (pitroom show --patch)" }))); break; }
        var hm = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/.exec(line);
        if (hm) { oldN = +hm[1]; newN = +hm[2]; tbody.append(h("tr", { class: "hunk" }, h("td", { class: "ln" }), h("td", { class: "ln" }), h("td", { text: line }))); continue; }
        if (line === "" && i === f.lines.length - 1) continue;
        if (line.startsWith("\\")) { tbody.append(h("tr", { class: "meta-line" }, h("td", { class: "ln" }), h("td", { class: "ln" }), h("td", { text: line }))); continue; }
        var sign = line[0] || " ", text = line.slice(1), kind = sign === "+" ? "add" : sign === "-" ? "del" : "ctx";
        var code = h("td", { class: "src" }, h("span", { class: "sign", "aria-hidden": "true", text: sign === " " ? " " : sign }));
        if (lang) {
          var side = kind === "del" ? "old" : "new";
          var res = H.line(lang, text, st[side]);
          st[side] = res.state;
          if (kind === "ctx") st.old = H.line(lang, text, st.old).state;
          res.tokens.forEach(function (t) { code.append(t[0] ? h("span", { class: "hl-" + t[0], text: t[1] }) : t[1]); });
        } else code.append(text);
        tbody.append(h("tr", { class: kind },
          h("td", { class: "ln", text: kind === "add" ? "" : String(oldN) }),
          h("td", { class: "ln", text: kind === "del" ? "" : String(newN) }), code));
        if (kind !== "add") oldN++;
        if (kind !== "del") newN++;
      }
      table.append(tbody);
      var headNote = f.head.filter(function (l) { return /^(new file|deleted file|rename|old mode|new mode|similarity|Binary)/.test(l); }).join(" · ");
      wrap.append(h("details", { class: "diff-file", open: true },
        h("summary", {}, h("code", { text: f.path }), " ", h("span", { class: "add", text: "+" + adds }), " ", h("span", { class: "del", text: "−" + dels }),
          lang ? h("span", { class: "muted small" }, " " + lang) : null, headNote ? h("span", { class: "muted small" }, " · " + headNote) : null),
        f.binary ? h("p", { class: "muted" }, "Binary file.") : h("div", { class: "diff-scroll" }, table)));
    });
    return wrap;
  }

  function stepsSection(d, r) {
    var steps = d.steps || [];
    if (!steps.length) return section("Steps", h("p", { class: "muted" }, d.card.held_until ? "Held until " + d.card.held_until + ": every target is cooling down after a rate limit." : r.state === "queued" ? "Waiting for a slot." : "No steps recorded."));
    var tools = 0, n = 0;
    // Relative times where the CLI stamped its lines; otherwise the entry's number.
    var timed = steps.some(function (e) { return e.at_ms !== undefined; });
    var list = h("ol", { class: "timeline" }, steps.map(function (e, i) {
      var when = e.at_ms !== undefined ? "+" + (e.at_ms / 1000).toFixed(1) + "s" : timed ? "" : "#" + (i + 1);
      var cls = "step k-" + e.kind + (e.outcome && e.outcome !== "ok" ? " o-" + e.outcome : "");
      if (e.kind === "tool") tools++;
      if (e.kind === "step") n++;
      var label = e.kind === "tool" ? e.name : e.kind === "step" ? "model call " + n + (e.name ? " (" + e.name + ")" : "") : e.kind === "text" ? "said" : "error";
      return h("li", { class: cls },
        h("span", { class: "when", text: when }),
        h("span", { class: "what" }, h("strong", { text: label }), e.outcome && e.outcome !== "ok" ? h("span", { class: "badge st-failed", text: e.outcome }) : null),
        h("span", { class: "detail" }, e.text || (e.tokens ? tokens(e.tokens) + " tokens" : ""), e.error ? h("span", { class: "err" }, " — " + e.error) : null));
    }));
    var note = tools + " tool calls" + (r.tally.failed_calls ? ", " + r.tally.failed_calls + " failed" : "") + (r.tally.denied_calls ? ", " + r.tally.denied_calls + " denied" : "");
    return section("Steps", [list, d.steps_truncated ? h("p", { class: "muted" }, "Longer than shown: pitroom show " + r.id + " --events has all of it.") : null], note);
  }

  function refsSection(refs) {
    var body = [h("p", {}, refs.verified + " of " + refs.total + " path:line references verified")];
    if (refs.bad && refs.bad.length) body.push(h("ul", { class: "bad-refs" }, refs.bad.map(function (b) { return h("li", { text: b }); })));
    return section("References", body);
  }

  function receiptSection(r) {
    var rc = r.receipt, u = r.tally.usage || {};
    if (!rc) return section("Receipt", h("p", { class: "muted" }, "The receipt is written when the run ends. So far: " + tokens((u.input || 0) + (u.output || 0) + (u.reasoning || 0) + (u.cache_read || 0) + (u.cache_write || 0)) + " tokens in " + r.tally.steps + " steps."));
    return section("Receipt", kv([
      ["Worker processed", tokens(rc.worker_tokens) + " tokens (input " + tokens(u.input) + ", output " + tokens(u.output) + ", reasoning " + tokens(u.reasoning) + ", cache read " + tokens(u.cache_read) + ")"],
      ["Returned", "~" + tokens(rc.returned_tokens) + " tokens" + (rc.compression ? ", " + Math.round(rc.compression) + "× compression" : "")],
      ["Worker cost", money(rc.cost)],
      ["Est. saved", rc.saved !== null && rc.saved !== undefined ? money(rc.saved) + " vs " + rc.primary + " (estimate)" : "n/a"],
      ["Steps", r.tally.steps + " steps, " + r.tally.tool_calls + " tool calls"]
    ]));
  }

  function attemptsSection(attempts) {
    var rows = attempts.map(function (a, i) {
      return h("tr", {}, h("td", { text: String(i + 1) }), h("td", {}, h("code", { text: a.target })), h("td", {}, badge(a.state)),
        h("td", { text: a.steps + " / " + a.tool_calls }), h("td", { text: dur(a.duration_ms, true) }),
        h("td", { text: attemptNote(a, attempts[i + 1]) }));
    });
    // Several attempts are a fallback chain, repair rounds of --verify, or both.
    var rounds = attempts.some(function (a) { return (a.round || 1) > 1; });
    var fellBack = attempts.some(function (a) { return a.fell_back; });
    var kind = rounds && fellBack ? "fallback chain and repair rounds" : rounds ? "repair rounds" : "fallback chain";
    return section("Attempts", h("div", { class: "table-wrap" }, h("table", { class: "grid" },
      h("thead", {}, h("tr", {}, ["#", "Target", "State", "Steps / tools", "Time", "Notes"].map(function (t) { return h("th", { text: t }); }))),
      h("tbody", {}, rows))), attempts.length > 1 ? kind : null);
  }

  function attemptNote(a, next) {
    var why = a.fell_back ? (next && next.target === a.target ? "ran again" : "fell back") :
      a.repaired ? "sent back" : a.handed_off ? "took over" : "";
    if ((a.round || 1) > 1) why = "round " + a.round + (why ? ", " + why : "");
    return why + (a.error ? (why ? ": " : "") + a.error : "");
  }

  function verifySection(v) {
    return section("Verify", [
      h("p", {}, h("code", { text: v.command }), " ", badge(v.passed ? "done" : "failed"), " ", v.timed_out ? "timed out" : "exit " + v.exit_code, " · " + dur(v.duration_ms, true)),
      v.tail ? h("pre", { class: "code tail", text: v.tail }) : null
    ]);
  }

  function yes(b) { return h("span", { class: b ? "ok" : "bad", text: b ? "held" : "not in place" }); }

  function safetySection(sf) {
    if (!sf) return section("Safety layers", h("p", { class: "muted" }, "Not recorded for this run."));
    var pairs = [["1 · git guard on PATH", yes(sf.guard_shim)], ["2 · git environment config", yes(sf.git_env_config)]];
    var l = sf.landlock;
    if (l && typeof l === "object") {
      Object.keys(l).forEach(function (k) {
        var v = l[k];
        pairs.push(["3 · " + k.replace(/_/g, " "), typeof v === "boolean" ? yes(v) : Array.isArray(v) ? v.join(", ") || "none" : v === null ? "–" : String(v)]);
      });
    } else pairs.push(["3 · Landlock", yes(false)]);
    if (sf.blocked_writes) pairs.push(["Refused writes seen", String(sf.blocked_writes)]);
    return section("Safety layers", kv(pairs));
  }

  // ---- History -----------------------------------------------------------------------------

  var historyFacets = null;

  // A select's options: "any", then each option (a value, or a [value, text] pair).
  function optionsOf(options, value) {
    return [h("option", { value: "", text: "any" })].concat(options.map(function (o) {
      var val = Array.isArray(o) ? o[0] : o, text = Array.isArray(o) ? o[1] : o;
      return h("option", { value: val, text: text, selected: val === value });
    }));
  }

  function select(name, label, options, value) {
    var id = "f-" + name;
    return h("label", { class: "field", for: id }, h("span", { text: label }),
      h("select", { id: id, name: name }, optionsOf(options, value)));
  }

  // The first answer brings the facets. They go into the selects in place, so what the
  // user has typed meanwhile stays (a re-render would wipe it); until then a select holds
  // only "any", so the value to keep is the one the address asked for.
  function fillFacets(form, facets, params) {
    [["worker", facets.workers], ["model", facets.models], ["group", facets.groups]].forEach(function (f) {
      var el = form.elements[f[0]];
      var chosen = el.value || params.get(f[0]) || "";
      clear(el).append.apply(el, optionsOf(f[1], chosen));
    });
  }

  function renderHistory() {
    setTitle("History");
    var p = state.route.params;
    var form = h("form", { class: "search", role: "search", onsubmit: function (e) {
      e.preventDefault();
      var q = new URLSearchParams();
      Array.from(new FormData(form).entries()).forEach(function (kvp) { if (kvp[1]) q.set(kvp[0], kvp[1]); });
      location.hash = "#/history" + (q.toString() ? "?" + q : "");
    } });
    var fac = historyFacets || { workers: [], models: [], groups: [] };
    form.append(
      h("label", { class: "field grow", for: "f-q" }, h("span", { text: "Search" }), h("input", { id: "f-q", name: "q", type: "search", value: p.get("q") || "", placeholder: "words in tasks, answers, steps", autocomplete: "off" })),
      select("worker", "Worker", fac.workers, p.get("worker") || ""),
      select("model", "Model", fac.models, p.get("model") || ""),
      select("state", "State", ["done", "failed", "timeout", "stopped", "over_budget"], p.get("state") || ""),
      select("group", "Crew", fac.groups, p.get("group") || ""),
      select("since", "Since", [["24h", "24 hours"], ["7d", "7 days"], ["30d", "30 days"], ["90d", "90 days"]], p.get("since") || ""),
      h("button", { class: "btn primary", type: "submit" }, "Search"));
    var results = h("div", { class: "results", "aria-live": "polite" }, h("p", { class: "muted" }, "Searching…"));
    clear(main).append(h("div", { class: "view-head" }, h("h1", { text: "History" })), form, results);
    var query = new URLSearchParams(p);
    var started = performance.now();
    api("/api/history?" + query).then(function (d) {
      if (!results.isConnected) return; // the user has moved on; a newer view owns the page
      if (!historyFacets) fillFacets(form, d.facets, p);
      historyFacets = d.facets;
      var took = Math.round(performance.now() - started);
      clear(results);
      // What these results answer, for anyone (a test, an extension) waiting on them.
      results.setAttribute("data-shown", query.toString());
      if (!d.hits.length) { results.append(h("p", { class: "muted" }, d.page ? "No more results." : "Nothing matches.")); }
      results.append(h("p", { class: "muted small" }, d.hits.length ? "Page " + (d.page + 1) + " · " + d.hits.length + " runs · " + took + " ms" : ""));
      results.append(h("ol", { class: "hits" }, d.hits.map(function (hit) { return hitView(hit, p.get("q")); })));
      var pager = h("nav", { class: "pager", "aria-label": "Pages" });
      var pageLink = function (n, text) { var q = new URLSearchParams(p); if (n) q.set("page", n); else q.delete("page"); return h("a", { class: "btn", href: "#/history" + (q.toString() ? "?" + q : "") }, text); };
      if (d.page > 0) pager.append(pageLink(d.page - 1, "← Newer"));
      if (d.has_more) pager.append(pageLink(d.page + 1, "Older →"));
      results.append(pager);
    }).catch(function (e) { clear(results).append(h("p", { class: "err", text: e.message })); });
  }

  // The ledger marks matches with [ ]; text has brackets of its own (`mean([])`), so only a
  // bracketed word that starts like a searched word is a match.
  function snippet(text, query) {
    var words = String(query || "").toLowerCase().split(/\s+/).filter(Boolean);
    var out = h("p", { class: "snippet" });
    String(text).split(/(\[[^\]]*\])/).forEach(function (part) {
      var inner = part.slice(1, -1).toLowerCase();
      var match = /^\[[^\]]+\]$/.test(part) && words.some(function (w) { return inner.startsWith(w.replace(/["*]/g, "")); });
      if (match) out.append(h("mark", { text: part.slice(1, -1) }));
      else if (part) out.append(part);
    });
    return out;
  }

  function hitView(hit, query) {
    var title = hit.pruned ? h("span", { text: firstLine(hit.task) }) : h("a", { href: "#/run/" + hit.id, text: firstLine(hit.task) });
    return h("li", { class: "hit" },
      h("div", { class: "hit-head" }, badge(hit.state), h("span", { class: "mode" }, hit.mode), h("h3", {}, title)),
      hit.snippet ? snippet(hit.snippet, query) : null,
      h("p", { class: "meta" }, hit.worker + " · " + ago(hit.started_at) + " · " + dur(hit.duration_ms, true) + " · " + tokens(hit.tokens) + " tokens · " + money(hit.cost) + (hit.saved ? " · saved " + money(hit.saved) : "") + (hit.pruned ? " · directory cleaned" : "")));
  }

  // ---- Stats -------------------------------------------------------------------------------

  function renderStats() {
    setTitle("Stats");
    var since = state.route.params.get("since") || "30d";
    var periods = [["7d", "7 days"], ["30d", "30 days"], ["90d", "90 days"], ["all", "All time"]];
    var body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
    clear(main).append(h("div", { class: "view-head" }, h("h1", { text: "Stats" }),
      h("nav", { class: "seg", "aria-label": "Period" }, periods.map(function (p) {
        return h("a", { href: "#/stats?since=" + p[0], class: "seg-item", "aria-current": p[0] === since ? "page" : null, text: p[1] });
      }))), body);
    api("/api/stats?since=" + encodeURIComponent(since)).then(function (d) { clear(body).append(statsView(d)); })
      .catch(function (e) { clear(body).append(h("p", { class: "err", text: e.message })); });
  }

  function statsView(d) {
    var sv = d.savings, frag = document.createDocumentFragment();
    var runs = d.workers.reduce(function (a, w) { return a + w.runs; }, 0);
    var done = d.workers.reduce(function (a, w) { return a + w.done; }, 0);
    var judged = d.workers.reduce(function (a, w) { return a + w.runs - w.rate_limited; }, 0);
    frag.append(h("div", { class: "tiles" },
      tile("Runs", String(runs)), tile("Success", judged ? pct(done / judged) : "–"),
      tile("Est. saved", money(sv.saved)), tile("Worker cost", money(sv.worker_cost)),
      tile("Tokens", tokens(sv.tokens)), tile("Compression", sv.compression ? Math.round(sv.compression) + "×" : "–")));
    if (!runs) { frag.append(h("p", { class: "panel muted" }, "No finished runs in this period.")); return frag; }
    frag.append(section("Runs per day", barChart(d.days, [["done", "c-done", "done"], ["failed", "c-failed", "not done"]], function (v) { return String(v); }), "UTC days"));
    frag.append(section("Estimated savings and cost per day", barChart(d.days, [["saved", "c-saved", "saved"], ["cost", "c-cost", "worker cost"]], money, true)));
    frag.append(section("Median time per day", barChart(d.days, [["median_ms", "c-time", "median time"]], function (v) { return dur(v, true); })));
    frag.append(section("Per worker and model", workerTable(d.workers)));
    frag.append(section("Success rate", hbars(d.workers, function (w) { return w.success_rate; }, pct, 1)));
    frag.append(section("Tokens", hbars(d.workers, function (w) { return w.tokens; }, tokens)));
    if (sv.cost_unknown_runs) frag.append(h("p", { class: "muted small" }, sv.cost_unknown_runs + " runs had no cost figure and count as $0 in the saving, which overstates it."));
    return frag;
  }

  function chartWidth() { return Math.max(280, main.clientWidth - 64); }

  function clipTo(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }

  function tile(label, value) { return h("div", { class: "tile" }, h("span", { class: "tile-label", text: label }), h("span", { class: "tile-value", text: value })); }

  // Bars per day, one series next to another (or stacked), drawn as inline SVG.
  function barChart(days, series, fmt, grouped) {
    // Drawn at the panel's width, so one unit is one pixel and the text stays its size.
    var W = chartWidth(), Hh = 180, pad = { l: 52, r: 8, t: 10, b: 26 };
    var stacked = !grouped && series.length > 1;
    var max = 0;
    days.forEach(function (d) {
      var v = stacked ? series.reduce(function (a, sr) { return a + (d[sr[0]] || 0); }, 0) : Math.max.apply(null, series.map(function (sr) { return d[sr[0]] || 0; }));
      max = Math.max(max, v);
    });
    if (!max) max = 1;
    var svg = s("svg", { viewBox: "0 0 " + W + " " + Hh, class: "chart", role: "img", "aria-label": series.map(function (x) { return x[2]; }).join(" and ") + " per day" });
    var plotW = W - pad.l - pad.r, plotH = Hh - pad.t - pad.b;
    [0, 0.5, 1].forEach(function (f) {
      var y = pad.t + plotH * (1 - f);
      svg.append(s("line", { x1: pad.l, x2: W - pad.r, y1: y, y2: y, class: "grid-line" }));
      svg.append(s("text", { x: pad.l - 6, y: y + 4, class: "axis", "text-anchor": "end", text: fmt(max * f) }));
    });
    var n = Math.max(days.length, 1), slot = plotW / n, bw = Math.max(2, Math.min(40, slot * 0.7));
    days.forEach(function (d, i) {
      var x = pad.l + slot * i + (slot - bw) / 2, y0 = pad.t + plotH;
      var title = d.day + ": " + series.map(function (sr) { return sr[2] + " " + fmt(d[sr[0]] || 0); }).join(", ");
      var g = s("g", {}, s("title", { text: title }));
      series.forEach(function (sr, k) {
        var v = d[sr[0]] || 0, hgt = plotH * v / max;
        if (stacked) { g.append(s("rect", { x: x, y: y0 - hgt, width: bw, height: Math.max(0, hgt), class: sr[1] })); y0 -= hgt; }
        else {
          var w = bw / series.length;
          g.append(s("rect", { x: x + w * k, y: pad.t + plotH - hgt, width: w, height: Math.max(0, hgt), class: sr[1] }));
        }
      });
      svg.append(g);
      var every = Math.ceil(n / 8);
      if (i % every === 0) svg.append(s("text", { x: pad.l + slot * i + slot / 2, y: Hh - 8, class: "axis", "text-anchor": "middle", text: d.day.slice(5) }));
    });
    var legend = h("p", { class: "legend" }, series.map(function (sr) { return h("span", {}, h("i", { class: "sw " + sr[1] }), sr[2]); }));
    return [svg, legend];
  }

  // One bar per worker; on a narrow pane the name goes above its bar instead of beside it.
  function hbars(workers, get, fmt, fixedMax) {
    var rows = workers.filter(function (w) { return get(w) !== null && get(w) !== undefined; });
    var max = fixedMax || Math.max.apply(null, rows.map(get).concat([1]));
    var W = chartWidth(), narrow = W < 500, row = narrow ? 40 : 26;
    var lw = narrow ? 0 : Math.min(230, Math.round(W * 0.38));
    var svg = s("svg", { viewBox: "0 0 " + W + " " + Math.max(row, rows.length * row), class: "chart hbars", role: "img", "aria-label": "per worker" });
    rows.forEach(function (w, i) {
      var v = get(w), bw = (W - lw - 70) * v / max, y = i * row, barY = narrow ? y + 18 : y + 5;
      var label = narrow
        ? s("text", { x: 0, y: y + 13, class: "axis", text: clipTo(w.worker, Math.floor(W / 6.6)) })
        : s("text", { x: lw - 8, y: y + 17, class: "axis", "text-anchor": "end", text: clipTo(w.worker, Math.floor((lw - 10) / 6.6)) });
      svg.append(s("g", {}, s("title", { text: w.worker + ": " + fmt(v) }), label,
        s("rect", { x: lw, y: barY, width: Math.max(1, bw), height: 16, class: "c-done" }),
        s("text", { x: lw + bw + 6, y: barY + 12, class: "axis", text: fmt(v) })));
    });
    return svg;
  }

  function workerTable(workers) {
    return h("div", { class: "table-wrap" }, h("table", { class: "grid" },
      h("thead", {}, h("tr", {}, ["Worker", "Runs", "Success", "Median", "Tokens", "Cost", "Saved"].map(function (t) { return h("th", { text: t }); }))),
      h("tbody", {}, workers.map(function (w) {
        return h("tr", {}, h("td", {}, h("code", { text: w.worker })), h("td", { text: String(w.runs) + (w.rate_limited ? " (" + w.rate_limited + " rate-limited)" : "") }),
          h("td", { text: pct(w.success_rate) }), h("td", { text: dur(w.median_ms, true) }), h("td", { text: tokens(w.tokens) }),
          h("td", { text: money(w.cost) + (w.cost_unknown_runs ? " +" + w.cost_unknown_runs + " n/a" : "") }), h("td", { text: money(w.saved) }));
      }))));
  }

  // ---- notifications -------------------------------------------------------------------------

  // Opt-in, kept in this browser: a run that ends while the page is open raises a notification.
  var notifyButton = document.getElementById("notify");
  function notifyOn() {
    try { return localStorage.getItem("pitroom-notify") === "on"; } catch (e) { return false; }
  }
  function showNotify() { notifyButton.setAttribute("aria-pressed", String(notifyOn() && "Notification" in window && Notification.permission === "granted")); }
  notifyButton.addEventListener("click", function () {
    if (!("Notification" in window)) { toast("This browser cannot show notifications."); return; }
    var on = !(notifyOn() && Notification.permission === "granted");
    try { localStorage.setItem("pitroom-notify", on ? "on" : "off"); } catch (e) { /* storage off */ }
    if (on && Notification.permission !== "granted") {
      Notification.requestPermission().then(function (p) {
        if (p !== "granted") toast("Notifications are blocked for this page in the browser's settings.");
        showNotify();
      });
    }
    showNotify();
  });
  showNotify();

  function noteEnd(before, card) {
    if (before && before.stoppable && !card.stoppable) notifyEnded(card);
  }

  function notifyEnded(card) {
    if (!notifyOn() || !("Notification" in window) || Notification.permission !== "granted") return;
    var title = "pitroom: " + card.state + (card.group ? " · " + card.group : "");
    var n = new Notification(title, { body: card.task, tag: "pitroom-" + card.id });
    n.onclick = function () { window.focus(); location.hash = "#/run/" + card.id; };
  }

  // ---- theme and start ---------------------------------------------------------------------

  document.getElementById("theme").addEventListener("click", function () {
    var root = document.documentElement;
    var dark = root.getAttribute("data-theme") ? root.getAttribute("data-theme") === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    var next = dark ? "light" : "dark";
    root.setAttribute("data-theme", next);
    try { localStorage.setItem("pitroom-theme", next); } catch (e) { /* storage off */ }
  });

  document.addEventListener("keydown", function (e) {
    if (e.key === "/" && !/INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName)) {
      var q = document.getElementById("f-q");
      if (q) { e.preventDefault(); q.focus(); }
    }
  });

  window.addEventListener("hashchange", route);
  setConn(false);
  route();
  loadLive();
})();
