/* evals view: runs, a run, an episode, comparisons and the leaderboard.
 * Every value from a run (model output, tool results, ids) is put on the page as text
 * (textContent / text nodes), never parsed as HTML. */
"use strict";
(() => {
  const STATIC = window.EVALS_STATIC || null;
  const main = document.getElementById("main");
  const statusEl = document.getElementById("status");
  let refreshTimer = null;
  let routeSeq = 0;

  // ---- DOM ------------------------------------------------------------------------------------
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "value" || k === "checked" || k === "selected") el[k] = v;
      else el.setAttribute(k, String(v));
    }
    add(el, kids);
    return el;
  }
  function add(el, kids) {
    for (const kid of kids) {
      if (kid === null || kid === undefined || kid === false) continue;
      if (Array.isArray(kid)) add(el, kid);
      else if (kid instanceof Node) el.appendChild(kid);
      else el.appendChild(document.createTextNode(String(kid)));
    }
  }
  function show(...kids) { main.replaceChildren(); add(main, kids); }
  const pre = (text, cls) => h("pre", { class: cls || "block" }, text === null || text === undefined ? "" : text);
  const json = (v) => typeof v === "string" ? v : JSON.stringify(v, null, 1);
  const inline = (v) => v === null || v === undefined ? "–" : typeof v === "string" ? v : JSON.stringify(v);

  // ---- data -----------------------------------------------------------------------------------
  const pending = {};
  // staticName: an exported file's name, as evals/view/export.py's static_name writes it: the first 32 hex
  // digits of the SHA-256 of the path's UTF-8 bytes (synchronous: crypto.subtle is async and may be missing
  // on file:// pages).
  // BEGIN staticName
  const SHA = {  // FIPS 180-4: the first 32 bits of the fractional parts of the primes' cube (k) and square (h) roots
    k: [
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2],
    h: [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19],
  };
  function sha256Hex(text) {
    const bytes = new TextEncoder().encode(text);
    const len = bytes.length, total = Math.ceil((len + 9) / 64) * 64;
    const m = new Uint8Array(total);
    m.set(bytes);
    m[len] = 0x80;
    const dv = new DataView(m.buffer);
    dv.setUint32(total - 8, Math.floor(len / 536870912));  // the length in bits, big-endian, 64 bits
    dv.setUint32(total - 4, (len * 8) >>> 0);
    const rotr = (x, n) => (x >>> n) | (x << (32 - n));
    const w = new Uint32Array(64);
    const hv = SHA.h.slice();
    for (let off = 0; off < total; off += 64) {
      for (let i = 0; i < 16; i++) w[i] = dv.getUint32(off + 4 * i);
      for (let i = 16; i < 64; i++) {
        const x = w[i - 15], y = w[i - 2];
        w[i] = w[i - 16] + (rotr(x, 7) ^ rotr(x, 18) ^ (x >>> 3)) + w[i - 7] + (rotr(y, 17) ^ rotr(y, 19) ^ (y >>> 10));
      }
      let [a, b, c, d, e, f, g, k] = hv;
      for (let i = 0; i < 64; i++) {
        const t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + SHA.k[i] + w[i]) >>> 0;
        const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
        k = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
      }
      [a, b, c, d, e, f, g, k].forEach((v, i) => { hv[i] = (hv[i] + v) >>> 0; });
    }
    return hv.map((v) => v.toString(16).padStart(8, "0")).join("");
  }
  const staticName = (path) => sha256Hex(path).slice(0, 32);
  // END staticName
  window.EVALS_DATA = (path, data) => { const p = pending[path]; if (p) { delete pending[path]; p.resolve(data); } };
  function load(path) {
    if (STATIC) {
      return new Promise((resolve, reject) => {
        pending[path] = { resolve, reject };
        const s = document.createElement("script");
        s.src = "data/" + staticName(path) + ".js";
        s.onerror = () => { delete pending[path]; reject(new Error("not part of this export: " + path)); };
        s.onload = () => s.remove();
        document.head.appendChild(s);
      });
    }
    const url = "api/" + path.split("/").map(encodeURIComponent).join("/");
    return fetch(url).then((r) => r.json().then((d) => {
      if (!r.ok) throw new Error(d.error || r.statusText);
      return d;
    }));
  }

  // ---- formatting -----------------------------------------------------------------------------
  function num(v, digits) {
    if (v === null || v === undefined || v === "") return "–";
    if (typeof v !== "number") return String(v);
    return v.toFixed(digits === undefined ? 2 : digits);
  }
  function valueSe(m) {
    if (!m || m.value === null || m.value === undefined) return "–";
    const v = m.kind === "count" ? String(m.value) : num(m.value);
    return typeof m.stderr === "number" ? v + " ± " + num(m.stderr) : v;
  }
  const arrow = (m) => m.kind === "percent" ? (m.higher_is_better ? " ↑" : " ↓") : "";
  // a derived value whose official code counts its parts not run as 0 names them (metric_stats' "missing")
  const missingNote = (m) => m && m.missing && m.missing.length
    ? h("span", { class: "missing small muted", title: "counted as 0, as the official code counts a part not run" },
      " (not run, counted as 0: " + m.missing.join(", ") + ")") : null;
  // a model without a price (cost_known false, cost null) costs "unknown", never $0
  function cost(v, known) {
    if (known === false || v === null || v === undefined) return "unknown";
    return typeof v === "number" ? "$" + (v < 0.01 && v > 0 ? v.toPrecision(2) : v.toFixed(2)) : "–";
  }
  const benchLabel = (r) => r.benchmark + (r.dataset_label ? " · " + r.dataset_label : "");
  function secs(v) { return typeof v === "number" ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) + " s" : "–"; }
  function date(s) { return s ? String(s).replace("T", " ").slice(0, 16) : "–"; }
  function tokens(t) {
    if (!t) return "–";
    const n = (t.input_tokens || 0) + (t.output_tokens || 0);
    return n >= 10000 ? (n / 1000).toFixed(0) + "k" : String(n);
  }
  function runLabel(r) { return (r.model || "?") + " · " + (r.strategy || "?"); }
  function sample(s, m) {
    if (!s) return "–";
    const [n, d] = s;
    if (m && m.kind === "percent" && d === 1 && (n === 0 || n === 1)) {
      if (m.higher_is_better === false) return n === 0 ? "none" : "yes";
      return n === 1 ? "✓" : "✗";
    }
    if (m && m.kind === "percent" && d > 0) return (100 * n / d).toFixed(0) + "%";
    return d === 1 ? String(n) : n + "/" + d;
  }
  const badge = (text, cls) => h("span", { class: "badge " + (cls || "") }, text);
  function passBadge(p) { return p === true ? badge("pass", "ok") : p === false ? badge("fail", "bad") : badge("n/a", "muted"); }
  const link = (href, ...kids) => h("a", { href }, ...kids);
  const runHref = (id) => "#/run/" + encodeURIComponent(id);
  const taskHref = (run, task) => runHref(run) + "/task/" + encodeURIComponent(task);
  function crumbs(...parts) {
    const out = [];
    parts.forEach((p, i) => { if (i) out.push(h("span", { class: "sep" }, "/")); out.push(p); });
    return h("div", { class: "crumbs" }, out);
  }
  function fail(err) { show(h("div", { class: "card error" }, h("h2", {}, "Could not load this page"), pre(String(err && err.message || err)))); }
  function table(header, rows, cls) {
    return h("div", { class: "wrap" }, h("table", { class: cls || "" },
      h("thead", {}, h("tr", {}, header.map((c) => h("th", {}, c)))),
      h("tbody", {}, rows)));
  }

  // ---- runs -----------------------------------------------------------------------------------
  const MAX_COMPARED = 16;  // evals/view/compare.py's MAX_COMPARED_RUNS
  function damagedCard(list) {
    if (!list || !list.length) return null;
    return h("section", { class: "card error" }, h("h3", {}, "Damaged runs (left out)"),
      table(["run directory", "why"], list.map((d) => h("tr", {}, h("td", {}, d.run_dir), h("td", {}, d.reason))), "damaged"));
  }
  async function pageRuns(seq) {
    const data = await load("runs");
    if (seq !== routeSeq) return;
    const selected = new Set();
    const cmpButton = h("button", { class: "primary", disabled: true, onclick: () => {
      const ids = data.runs.filter((r) => selected.has(r.id)).map((r) => r.id);
      location.hash = "#/compare/" + ids.map(encodeURIComponent).join(",");
    } }, "Compare selected");
    const hint = h("span", { class: "muted", id: "cmp-hint" }, "Select two or more runs of one benchmark and task set to compare them.");
    function update() {
      const picked = data.runs.filter((r) => selected.has(r.id));
      const groups = new Set(picked.map((r) => r.group));
      const benches = new Set(picked.map((r) => r.benchmark));
      cmpButton.disabled = !(selected.size >= 2 && selected.size <= MAX_COMPARED && groups.size === 1);
      hint.textContent = benches.size > 1 ? "The selected runs are of different benchmarks." :
        groups.size > 1 ? "The selected runs ran different task sets: " + [...new Set(picked.map((r) => r.dataset_label))].join(", ") + "." :
        selected.size > MAX_COMPARED ? "At most " + MAX_COMPARED + " runs are compared at once." :
        selected.size >= 2 ? selected.size + " runs selected." : "Select two or more runs of one benchmark and task set to compare them.";
    }
    const rows = data.runs.map((r) => {
      const box = h("input", { type: "checkbox", "aria-label": "select " + r.id, onchange: (e) => {
        if (e.target.checked) selected.add(r.id); else selected.delete(r.id); update(); } });
      let state;
      if (r.in_progress) {
        const done = r.traced, of = r.planned;
        state = h("div", { class: "progress" }, h("div", { class: "bar" }, h("span", { style: null })), h("small", {}, "running: " + done + (of ? " / " + of : "") + " episodes"));
        const pct = of ? Math.min(100, 100 * done / of) : 0;
        state.querySelector(".bar span").style.width = pct + "%";
      } else if (!r.scored) state = badge("not scored", "warn");
      else if (r.scores_stale) state = badge("scores older than traces", "warn");
      else state = null;
      const t = (r.totals || {}).model || {};
      return h("tr", { "data-run": r.id },
        h("td", {}, box),
        h("td", {}, h("span", { class: "bench" }, r.benchmark), r.dataset_label ? h("div", { class: "dataset muted small" }, r.dataset_label) : null),
        h("td", {}, link(runHref(r.id), h("strong", {}, r.model || "?")), h("div", { class: "muted small" }, r.id)),
        h("td", {}, r.strategy || "–"),
        h("td", { class: "nowrap" }, date(r.created_at)),
        h("td", { class: "num" }, String(r.tasks), r.errored ? h("div", { class: "small bad-text" }, r.errored + " errored") : null),
        h("td", {}, h("div", { class: "headline" }, (r.headline || []).map((m) =>
          h("div", { class: "metric", "data-metric": m.key }, h("span", { class: "label" }, m.label + arrow(m)), h("span", { class: "value" }, valueSe(m)), missingNote(m))))),
        h("td", { class: "num cost" }, cost(t.cost_usd, t.cost_known), h("div", { class: "muted small" }, tokens(t) + " tok")),
        h("td", {}, state));
    });
    const byGroup = {};  // runs of one benchmark and task set: the only runs compared together
    for (const r of data.runs) (byGroup[r.group] = byGroup[r.group] || []).push(r);
    const quick = Object.values(byGroup).filter((rs) => rs.length >= 2 && rs.length <= MAX_COMPARED).map((rs) =>
      link("#/compare/" + rs.map((r) => encodeURIComponent(r.id)).join(","), "Compare all " + rs.length + " " + benchLabel(rs[0]) + " runs"));
    show(h("div", { class: "pagehead" }, h("h1", {}, "Runs"), h("div", { class: "actions" }, hint, cmpButton)),
      h("section", { class: "card" }, table(["", "benchmark", "model", "strategy", "date", "tasks", "headline metrics (± standard error)", "cost", ""], rows, "runs")),
      quick.length ? h("p", { class: "quick" }, quick.map((q, i) => [i ? " · " : "", q])) : null,
      damagedCard(data.damaged));
    if (!STATIC && data.runs.some((r) => r.in_progress)) {
      statusEl.textContent = "refreshing every 3 s while a run is in progress";
      refreshTimer = setTimeout(() => { if (seq === routeSeq) route(true); }, 3000);
    } else statusEl.textContent = "";
  }

  // ---- a run ----------------------------------------------------------------------------------
  function metricTable(block) {
    const rows = block.rows.map((m) => h("tr", {},
      h("td", {}, m.label + arrow(m), m.label !== m.name ? h("div", { class: "muted small" }, m.key) : null),
      h("td", { class: "num strong nowrap" }, valueSe(m)),
      h("td", { class: "muted" }, m.over === "tasks" ? m.tasks + " tasks" : (m.samples || 0) + " " + m.over + " (" + m.tasks + " tasks)")));
    return h("section", { class: "card" }, h("h3", {}, block.block === "metrics" ? "Metrics" : block.block.replace(/_/g, " ")),
      table(["metric", "value", "over"], rows, "metrics"));
  }

  function breakdowns(run) {
    const dims = Object.entries(run.breakdowns || {});
    if (!dims.length) return null;
    const metrics = Object.values(run.breakdown_metrics || {}).filter((m) => m.kind !== "count" && !m.derived);
    const names = new Set();
    for (const [, groups] of dims) for (const g of Object.values(groups)) for (const k of Object.keys(g)) if (k !== "tasks") names.add(k);
    const choices = metrics.filter((m) => names.has(m.name));
    if (!choices.length) return null;
    const select = h("select", { "aria-label": "breakdown metric" }, choices.map((m) => h("option", { value: m.name }, m.label)));
    const body = h("div", { class: "charts" });
    function draw() {
      const m = choices.find((c) => c.name === select.value) || choices[0];
      body.replaceChildren();
      for (const [dim, groups] of dims) {
        const bars = Object.entries(groups).map(([g, row]) => {
          const v = row[m.name];
          const w = typeof v === "number" && m.kind === "percent" ? Math.max(0, Math.min(100, v)) : 0;
          const bar = h("div", { class: "barfill" });
          bar.style.width = w + "%";
          return h("div", { class: "barrow" }, h("span", { class: "glabel", title: g }, g),
            h("div", { class: "bartrack" }, bar), h("span", { class: "gvalue" }, num(v)), h("span", { class: "gn muted" }, "n=" + row.tasks));
        });
        body.appendChild(h("div", { class: "chart" }, h("h4", {}, "by " + dim), bars));
      }
    }
    select.addEventListener("change", draw);
    draw();
    return h("section", { class: "card" }, h("div", { class: "cardhead" }, h("h3", {}, "Breakdowns"), h("label", {}, "metric ", select)), body);
  }

  function paper(run) {
    if (!run.paper || !run.paper.length) return null;
    const keys = [];
    for (const r of run.paper) for (const k of Object.keys(r.metrics)) if (!keys.includes(k)) keys.push(k);
    const main = {};
    for (const b of run.blocks) if (b.block === "metrics") for (const m of b.rows) main[m.name] = m;
    const rows = run.paper.map((r) => h("tr", { class: r.same_model ? "self" : "" },
      h("td", {}, r.source), h("td", {}, r.model), keys.map((k) => h("td", { class: "num" }, num(r.metrics[k])))));
    rows.push(h("tr", { class: "this" }, h("td", {}, "this run"), h("td", {}, run.model),
      keys.map((k) => h("td", { class: "num" }, main[k] ? valueSe(main[k]) : "–"))));
    return h("section", { class: "card" }, h("h3", {}, "Published numbers of this setting"),
      table(["source", "model", ...keys.map((k) => main[k] ? main[k].label : k)], rows, "paper"),
      h("p", { class: "muted small" }, "The papers' rows of the run's dataset and setting; the row of the run's own model is highlighted."));
  }

  // the summary's anomalies (evals/core/anomalies.py): what was unusual and how it was counted; text only
  function anomaliesCard(run) {
    const list = (run.anomalies || []).filter((a) => a && typeof a === "object");
    if (!list.length) return null;
    const rows = list.map((a) => {
      const where = Array.isArray(a.where) ? a.where.map(String) : [];
      const more = typeof a.count === "number" && a.count > where.length && where.length ? " and " + (a.count - where.length) + " more" : "";
      return h("li", { class: "anomaly" },
        h("div", {}, badge(String(a.kind || "warning"), "warn"), " ", h("span", { class: "muted small" }, String(a.source || "")),
          typeof a.count === "number" ? h("span", { class: "small" }, " · " + a.count + " affected") : null),
        h("div", { class: "msg" }, String(a.message || "")),
        a.counted_as ? h("div", { class: "small" }, "counted as: " + String(a.counted_as)) : null,
        a.official ? h("div", { class: "small" }, "official code: " + String(a.official)) : null,
        where.length ? h("div", { class: "small muted" }, "at: " + where.join(", ") + more) : null);
    });
    return h("section", { class: "card anomalies", id: "anomalies" }, h("h3", {}, "Caveats (" + list.length + ")"),
      h("p", { class: "muted small" }, "What was unusual in this run or import, and how it was counted; read these before setting its numbers beside a paper's."),
      h("ul", { class: "anomalies" }, rows));
  }

  async function pageRun(seq, id) {
    const [run, tasks] = await Promise.all([load("run/" + id), load("run/" + id + "/tasks")]);
    if (seq !== routeSeq) return;
    const t = (run.totals || {}).model || {};
    const head = h("div", { class: "pagehead" },
      h("div", {}, crumbs(link("#/", "Runs"), h("span", {}, run.id)),
        h("h1", {}, runLabel(run)), h("div", { class: "muted" }, benchLabel(run) + " · " + date(run.created_at) + " · " + run.run_dir)),
      h("div", { class: "cards" },
        (run.headline || []).map((m) => h("div", { class: "stat" }, h("div", { class: "label" }, m.label + arrow(m)), h("div", { class: "value" }, valueSe(m)), missingNote(m))),
        h("div", { class: "stat" }, h("div", { class: "label" }, "tasks"), h("div", { class: "value" }, String(run.tasks)),
          h("div", { class: "small muted" }, run.completed + " completed · " + run.errored + " errored")),
        h("div", { class: "stat" }, h("div", { class: "label" }, "cost · tokens"), h("div", { class: "value cost" }, cost(t.cost_usd, t.cost_known)), h("div", { class: "small muted" }, tokens(t) + " tokens · " + (t.turns || 0) + " turns"))));
    const notes = [];
    if (!run.scored) notes.push("This run has no stored scores yet: run `evals score " + run.run_dir + "` to score it.");
    else if (run.scores_stale) notes.push("Traces were written after the scores: run `evals score " + run.run_dir + "` to bring them up to date.");
    if (run.in_progress) notes.push("This run is in progress (" + run.traced + " episodes so far).");
    show(head, notes.map((n) => h("p", { class: "note warn" }, n)), anomaliesCard(run),
      h("div", { class: "grid2" }, h("div", {}, run.blocks.map(metricTable)),
        h("div", {}, breakdowns(run), run.plot ? h("section", { class: "card" }, h("h3", {}, "By hop count"), h("img", { src: run.plot, alt: "main metric by hop count", class: "plot" })) : null, paper(run))),
      taskTable(run, tasks));
  }

  function taskTable(run, data) {
    const metrics = data.metrics.slice(0, 4);  // the columns; every metric can still filter
    const passMetrics = data.metrics.filter((m) => m.kind === "percent");
    const filter = h("select", { "aria-label": "filter", id: "task-filter" });
    const opts = [["all", "all tasks"]];
    for (const m of passMetrics) {
      const failed = data.tasks.filter((t) => t.passed[m.key] === false).length;
      opts.push(["failed:" + m.key, "failed on " + m.label + " (" + failed + ")"]);
    }
    for (const m of passMetrics.slice(0, 1)) opts.push(["passed:" + m.key, "passed " + m.label]);
    const errored = data.tasks.filter((t) => t.status === "errored").length;
    opts.push(["errored", "errored (" + errored + ")"]);
    for (const [v, label] of opts) filter.appendChild(h("option", { value: v }, label));
    const group = h("select", { "aria-label": "group", id: "task-group" }, h("option", { value: "" }, "every group"));
    for (const [dim, groups] of Object.entries(data.groups)) {
      const og = h("optgroup", { label: dim });
      for (const g of groups) og.appendChild(h("option", { value: dim + "\u0000" + g }, dim + " = " + g));
      group.appendChild(og);
    }
    const search = h("input", { type: "search", placeholder: "search id, query, error…", "aria-label": "search", id: "task-search" });
    const count = h("span", { class: "muted" });
    const tbody = h("tbody");
    let sortKey = null, sortDir = 1, limit = 200;
    const more = h("button", { onclick: () => { limit += 500; draw(); } }, "show more");
    const cols = [["id", "task"], ["query", "query"], ...metrics.map((m) => ["m:" + m.key, m.label + arrow(m)]),
      ["status", "status"], ["turns", "turns"], ["tokens", "tokens"], ["latency_s", "latency"], ["error", "error"]];
    const ths = cols.map(([k, label]) => h("th", { class: "sortable", onclick: () => {
      sortDir = sortKey === k ? -sortDir : 1; sortKey = k; draw(); } }, label));
    function val(t, k) {
      if (k.startsWith("m:")) { const s = t.samples[k.slice(2)]; return s ? (s[1] ? s[0] / s[1] : 0) : -1; }
      return t[k] === null || t[k] === undefined ? "" : t[k];
    }
    function rows() {
      const f = filter.value, g = group.value, q = search.value.trim().toLowerCase();
      let out = data.tasks.filter((t) => {
        if (f.startsWith("failed:") && t.passed[f.slice(7)] !== false) return false;
        if (f.startsWith("passed:") && t.passed[f.slice(7)] !== true) return false;
        if (f === "errored" && t.status !== "errored") return false;
        if (g) { const [dim, v] = g.split("\u0000"); if (t.groups[dim] !== v) return false; }
        if (q && !(t.id + "\n" + (t.query || "") + "\n" + (t.error || "")).toLowerCase().includes(q)) return false;
        return true;
      });
      if (sortKey) out = out.slice().sort((a, b) => { const x = val(a, sortKey), y = val(b, sortKey); return (x < y ? -1 : x > y ? 1 : 0) * sortDir; });
      return out;
    }
    function draw() {
      const all = rows();
      count.textContent = all.length + " of " + data.tasks.length + " tasks";
      ths.forEach((th, i) => th.classList.toggle("sorted", cols[i][0] === sortKey));
      tbody.replaceChildren();
      for (const t of all.slice(0, limit)) {
        tbody.appendChild(h("tr", { "data-task": t.id, class: t.status === "errored" ? "errored" : "" },
          h("td", { class: "nowrap" }, link(taskHref(run.id, t.id), t.id)),
          h("td", { class: "query" }, t.query || "–"),
          metrics.map((m) => h("td", { class: "num " + (t.passed[m.key] === false ? "bad-text" : t.passed[m.key] ? "ok-text" : "") }, sample(t.samples[m.key], m))),
          h("td", {}, t.status),
          h("td", { class: "num" }, inline(t.turns)), h("td", { class: "num" }, inline(t.tokens)),
          h("td", { class: "num" }, secs(t.latency_s)), h("td", { class: "err small" }, t.error || "")));
      }
      more.hidden = all.length <= limit;
    }
    for (const el of [filter, group]) el.addEventListener("change", () => { limit = 200; draw(); });
    search.addEventListener("input", () => { limit = 200; draw(); });
    draw();
    return h("section", { class: "card", id: "tasks" }, h("div", { class: "cardhead" }, h("h3", {}, "Tasks"), h("div", { class: "filters" }, filter, group, search, count)),
      h("div", { class: "wrap" }, h("table", { class: "tasks" }, h("thead", {}, h("tr", {}, ths)), tbody)), more);
  }

  // ---- an episode -----------------------------------------------------------------------------
  function callBox(title, call, cls) {
    if (!call) return h("div", { class: "call " + cls }, h("div", { class: "calltitle" }, title), h("div", { class: "muted" }, "(none)"));
    return h("div", { class: "call " + cls }, h("div", { class: "calltitle" }, title), h("code", { class: "fn" }, call.name || "?"));
  }
  function callsSection(s) {
    return h("section", { class: "card calls-section" }, h("h3", {}, s.title), s.note ? h("p", { class: "muted small" }, s.note) : null,
      (s.pairs || []).map((p) => {
        const nameDiffers = p.gold && p.predicted && p.gold.name !== p.predicted.name;
        const rows = (p.diff || []).map((d) => h("tr", { class: d.same ? "" : "differs" },
          h("td", {}, h("code", {}, d.key)),
          h("td", { class: "gold" }, d.in_gold ? inline(d.gold) : h("span", { class: "muted" }, "(absent)")),
          h("td", { class: "pred" }, d.in_predicted ? inline(d.predicted) : h("span", { class: "muted" }, "(absent)")),
          h("td", {}, d.same ? "=" : "≠")));
        const verdict = p.match === true ? badge("match", "ok") : p.match === false ? badge("no match", "bad") : badge("undecided", "muted");
        return h("div", { class: "pair" },
          h("div", { class: "pairhead" }, callBox("gold", p.gold, "goldcall"), h("div", { class: "vs" + (nameDiffers ? " differs" : "") }, nameDiffers ? "≠" : "vs"), callBox("predicted", p.predicted, "predcall")),
          rows.length ? table(["argument", "gold", "predicted", ""], rows, "diff") : null,
          h("div", { class: "decision" }, verdict, p.matcher ? h("span", {}, " decided by ", h("strong", {}, p.matcher)) : null,
            p.reason ? h("span", { class: "reason" }, " — " + p.reason) : null));
      }));
  }
  function chainsSection(s) {
    return h("section", { class: "card" }, h("h3", {}, s.title), s.note ? h("p", { class: "muted small" }, s.note) : null,
      (s.chains || []).map((c) => h("div", { class: "chain" },
        c.label ? h("span", { class: "chainlabel" }, c.label) : null,
        (c.steps || []).map((st, i) => i % 2 ? h("span", { class: "edge" }, "—" + st + "→") : h("span", { class: "node" }, st)),
        c.ok === true ? badge("ok", "ok") : c.ok === false ? badge("off the gold path", "bad") : null,
        c.note ? h("span", { class: "muted small" }, " " + c.note) : null)));
  }
  function section(s) {
    if (s.kind === "calls") return callsSection(s);
    if (s.kind === "chains") return chainsSection(s);
    if (s.kind === "table") return h("section", { class: "card" }, h("h3", {}, s.title),
      table(s.header, (s.rows || []).map((r) => h("tr", {}, r.map((c) => h("td", {}, inline(c)))))), s.note ? h("p", { class: "muted small" }, s.note) : null);
    if (s.collapsed) return h("section", { class: "card" }, h("details", { class: "collapsed-section" }, h("summary", {}, s.title || ""),
      s.note ? h("p", { class: "muted small" }, s.note) : null, pre(s.text, "text")));
    return h("section", { class: "card" }, h("h3", {}, s.title || ""), pre(s.text), s.note ? h("p", { class: "muted small" }, s.note) : null);
  }
  function item(it) {
    if (it.kind === "message") {
      const body = pre(it.text, "text");
      return h("div", { class: "item msg " + it.role }, h("div", { class: "who" }, it.role),
        it.role === "system" ? h("details", {}, h("summary", {}, "system prompt"), body) : body);
    }
    if (it.kind === "response") {
      return h("div", { class: "item response" },
        h("div", { class: "who" }, "model · turn " + it.turn, h("span", { class: "meta" }, [
          it.input_tokens !== null && it.input_tokens !== undefined ? it.input_tokens + " in / " + it.output_tokens + " out tokens" : null,
          typeof it.latency_s === "number" ? secs(it.latency_s) : null, it.stop_reason].filter(Boolean).join(" · "))),
        it.reasoning ? h("details", {}, h("summary", {}, "reasoning"), pre(it.reasoning, "text")) : null,
        it.text ? pre(it.text, "text") : null,
        (it.calls || []).map((c) => h("div", { class: "callreq" }, h("span", { class: "arrow" }, "→ "), h("code", { class: "fn" }, c.name),
          h("code", { class: "args" }, c.parse_error ? (c.raw_arguments || "") : inline(c.arguments)),
          c.parse_error ? badge("unparsable: " + c.parse_error, "bad") : null)));
    }
    if (it.kind === "tool") {
      return h("div", { class: "item tool" + (it.is_error ? " iserror" : "") },
        h("div", { class: "who" }, "tool ", h("code", { class: "fn" }, it.name), it.is_error ? badge("error", "bad") : badge("ok", "ok"),
          h("span", { class: "meta" }, [typeof it.latency_s === "number" ? secs(it.latency_s) : null, it.by ? "by " + it.by : null].filter(Boolean).join(" · "))),
        h("div", { class: "kv" }, h("span", { class: "k" }, "arguments"), h("code", { class: "args" }, inline(it.arguments))),
        h("div", { class: "kv" }, h("span", { class: "k" }, "result"), pre(it.result, "result")));
    }
    if (it.kind === "error") {
      return h("div", { class: "item err" }, h("div", { class: "who" }, it.what === "attempt_failed" ? "failed attempt " + (it.attempt || "") : "model error",
        h("span", { class: "meta" }, it.delay ? "retried after " + secs(it.delay) : "")), pre((it.type || "Error") + ": " + (it.message || ""), "text"));
    }
    if (it.kind === "answer") return h("div", { class: "item answer" }, h("div", { class: "who" }, "final answer"), pre(it.text, "text"));
    if (it.kind === "note") return h("div", { class: "item note" }, h("div", { class: "who" }, "note"), pre(it.text, "text"), it.data ? h("details", {}, h("summary", {}, "data"), pre(it.data)) : null);
    return h("div", { class: "item event" }, h("div", { class: "who" }, it.name || "event"), pre(it.data));
  }

  async function pageEpisode(seq, runId, taskId) {
    const ep = await load("run/" + runId + "/episode/" + taskId);
    if (seq !== routeSeq) return;
    const t = ep.totals || {};
    const chips = (ep.scores || []).filter((s) => s.block === "metrics").map((s) =>
      h("span", { class: "chip " + (s.passed === true ? "ok" : s.passed === false ? "bad" : "") }, s.label + ": " + sample(s.sample, s)));
    show(
      h("div", { class: "pagehead" }, h("div", {},
        crumbs(link("#/", "Runs"), link(runHref(runId), runId), h("span", {}, taskId)),
        h("h1", {}, taskId, " ", badge(ep.status, ep.status === "completed" ? "ok" : "bad")),
        h("div", { class: "muted" }, ep.model + " · " + ep.benchmark + " · " + (t.turns || 0) + " turns · " + tokens(t) + " tokens · " + secs(ep.duration_s)
          + (Object.keys(ep.groups || {}).length ? " · " + Object.entries(ep.groups).map(([k, v]) => k + " " + v).join(", ") : "")))),
      ep.query ? h("section", { class: "card query" }, h("h3", {}, "Query"), pre(ep.query, "text")) : null,
      chips.length ? h("div", { class: "chips" }, chips) : null,
      ep.error ? h("section", { class: "card error" }, h("h3", {}, "Error"), pre((ep.error.type || "Error") + ": " + (ep.error.message || ""))) : null,
      ep.sections_note ? h("p", { class: "note warn" }, ep.sections_note) : null,
      (ep.sections || []).map(section),
      (ep.judge || []).length ? h("section", { class: "card" }, h("h3", {}, "Judge decisions"), ep.judge.map((d, i) => h("div", { class: "judge" },
        h("h4", {}, "decision " + (i + 1)), d.prompt ? h("details", {}, h("summary", {}, "prompt"), pre(d.prompt, "text")) : null,
        h("div", { class: "kv" }, h("span", { class: "k" }, "answer"), pre(d.answer, "text")), d.fields ? h("details", {}, h("summary", {}, "fields"), pre(d.fields)) : null))) : null,
      h("section", { class: "card transcript" }, h("h3", {}, "Transcript"), (ep.items || []).length ? ep.items.map(item) : h("p", { class: "muted" }, "No events recorded."),
        ep.final_answer && !(ep.items || []).some((i) => i.kind === "answer") ? item({ kind: "answer", text: ep.final_answer }) : null),
      h("section", { class: "card" }, h("h3", {}, "Scores and details"),
        (ep.scores || []).length ? table(["metric", "sample", "pass"], (ep.scores || []).map((s) => h("tr", {}, h("td", {}, s.label, h("div", { class: "muted small" }, s.key)),
          h("td", { class: "num" }, sample(s.sample, s)), h("td", {}, passBadge(s.passed)))), "metrics") : h("p", { class: "muted" }, "Not scored."),
        ep.details ? h("details", {}, h("summary", {}, "scorer details"), pre(ep.details)) : null,
        ep.outcome ? h("details", {}, h("summary", {}, "episode outcome"), pre(ep.outcome)) : null));
  }

  // ---- compare --------------------------------------------------------------------------------
  function pval(p) { return typeof p !== "number" ? "–" : p < 0.001 ? "< 0.001" : p.toFixed(3); }
  async function pageCompare(seq, ids) {
    const data = await load("compare/" + ids.join(","));
    if (seq !== routeSeq) return;
    const runs = data.runs;
    const label = (id) => { const r = runs.find((x) => x.id === id); return r ? runLabel(r) + " (" + r.id + ")" : id; };
    const stats = data.comparisons.map((c) => h("section", { class: "card" },
      h("h3", {}, label(c.other) + " against " + label(c.baseline)),
      table(["metric", "baseline", "other", "difference", "95% CI", "test", "p", "only baseline right", "only other right", "paired tasks"],
        c.metrics.map((m) => {
          const sig = typeof m.p_value === "number" && m.p_value < 0.05;
          return h("tr", { class: sig ? "sig" : "" }, h("td", {}, m.label + arrow(m)), h("td", { class: "num" }, num(m.baseline)), h("td", { class: "num" }, num(m.other)),
            h("td", { class: "num strong " + (!m.difference ? "" : (m.difference > 0) === (m.higher_is_better !== false) ? "up" : "down") }, (m.difference > 0 ? "+" : "") + num(m.difference)),
            h("td", { class: "num nowrap" }, "[" + num(m.ci95[0]) + ", " + num(m.ci95[1]) + "]"),
            h("td", { class: "nowrap" }, m.test), h("td", { class: "num nowrap" }, pval(m.p_value), sig ? " *" : ""),
            h("td", { class: "num" }, inline(m.only_baseline)), h("td", { class: "num" }, inline(m.only_other)), h("td", { class: "num" }, String(m.paired_tasks)));
        }), "compare")));
    const metricSel = h("select", { "aria-label": "compare metric", id: "cmp-metric" }, data.metrics.map((m) => h("option", { value: m.key }, m.label)));
    const which = h("select", { "aria-label": "which tasks", id: "cmp-which" }, [["flipped", "flipped tasks"], ["all", "all tasks"], ["allwrong", "wrong in every run"], ["allright", "right in every run"]].map(([v, l]) => h("option", { value: v }, l)));
    const tbody = h("tbody");
    const count = h("span", { class: "muted" });
    function draw() {
      const k = metricSel.value;
      const list = data.tasks.filter((t) => {
        const p = (t.passed[k] || []).filter((x) => x !== null);
        if (which.value === "flipped") return p.length > 1 && new Set(p).size > 1;
        if (which.value === "allwrong") return p.length && p.every((x) => x === false);
        if (which.value === "allright") return p.length && p.every((x) => x === true);
        return true;
      });
      count.textContent = list.length + " of " + data.tasks.length + " tasks";
      tbody.replaceChildren();
      for (const t of list.slice(0, 1000)) {
        tbody.appendChild(h("tr", { "data-task": t.id }, h("td", { class: "nowrap" }, t.id), h("td", { class: "query" }, t.query || "–"),
          (t.passed[k] || []).map((p, i) => h("td", { class: "center" }, link(taskHref(runs[i].id, t.id), p === true ? badge("✓ right", "ok") : p === false ? badge("✗ wrong", "bad") : badge("–", "muted"))))));
      }
    }
    metricSel.addEventListener("change", draw);
    which.addEventListener("change", draw);
    draw();
    show(h("div", { class: "pagehead" }, h("div", {}, crumbs(link("#/", "Runs"), h("span", {}, "compare")),
      h("h1", {}, "Compare " + runs.length + " runs of " + benchLabel(data)),
      h("div", { class: "muted" }, runs.map((r, i) => (i ? "; " : "baseline: ") + runLabel(r) + " (" + r.id + ")").join("")))),
      stats,
      h("p", { class: "muted small" }, "Difference = other − baseline over the tasks both runs scored. CI: " + data.methods.ci + ". Test: " + data.methods.binary + " for pass/fail metrics; " + data.methods.other + " otherwise. * p < 0.05."),
      h("section", { class: "card", id: "flips" }, h("div", { class: "cardhead" }, h("h3", {}, "Tasks"), h("div", { class: "filters" }, metricSel, which, count)),
        h("div", { class: "wrap" }, h("table", { class: "flips" },
          h("thead", {}, h("tr", {}, ["task", "query", ...runs.map((r) => runLabel(r))].map((c) => h("th", {}, c)))), tbody))));
  }

  // ---- leaderboard ----------------------------------------------------------------------------
  async function pageLeaderboard(seq) {
    const data = await load("leaderboard");
    if (seq !== routeSeq) return;
    show(h("div", { class: "pagehead" }, h("h1", {}, "Leaderboard")),
      data.groups.length ? data.groups.map((g) => h("section", { class: "card leadgroup" }, h("h3", {}, benchLabel(g) + " · " + g.setting),
        table(["#", "model", ...g.metrics.map((m) => m.label + (m.higher_is_better ? " ↑" : " ↓")), "tasks", "runs", "cost"],
          g.rows.map((r, i) => h("tr", { "data-model": r.model }, h("td", {}, String(i + 1)), h("td", {}, h("strong", {}, r.model)),
            g.metrics.map((m) => h("td", { class: "num" }, valueSe(r.metrics[m.key] ? { ...r.metrics[m.key], kind: "percent" } : null), missingNote(r.metrics[m.key]))),
            h("td", { class: "num" }, String(r.tasks)), h("td", { class: "num" }, String(r.runs)), h("td", { class: "num cost" }, cost(r.cost_usd, r.cost_known)))), "leader"))) :
        h("p", { class: "muted" }, "No scored runs."),
      damagedCard(data.damaged),
      h("p", { class: "muted small" }, "One row per model (its newest run) in each benchmark, task set and setting, best first; values ± standard error. Also: evals leaderboard DIR --format table|csv|json."));
  }

  // ---- routing --------------------------------------------------------------------------------
  function route(refresh) {
    clearTimeout(refreshTimer);
    const seq = ++routeSeq;
    const hash = location.hash.replace(/^#/, "") || "/";
    const parts = hash.split("/").filter(Boolean).map(decodeURIComponent);
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.nav === (parts[0] === "leaderboard" ? "leaderboard" : "runs"));
    let p;
    if (!parts.length) p = pageRuns(seq);
    else if (parts[0] === "leaderboard") p = pageLeaderboard(seq);
    else if (parts[0] === "compare" && parts[1]) p = pageCompare(seq, hash.split("/")[2].split(",").map(decodeURIComponent));
    else if (parts[0] === "run" && parts.length === 2) p = pageRun(seq, parts[1]);
    else if (parts[0] === "run" && parts[2] === "task") p = pageEpisode(seq, parts[1], hash.split("/").slice(4).map(decodeURIComponent).join("/"));
    else p = Promise.reject(new Error("no such page: " + hash));
    p.then(() => { if (seq === routeSeq) document.body.dataset.page = parts[0] || "runs"; if (refresh !== true) window.scrollTo(0, 0); })
      .catch((e) => { if (seq === routeSeq) fail(e); });
  }
  window.addEventListener("hashchange", () => route(false));
  route();
})();
