/* replay report: charts, sortable tables and the turn navigator.
 * Reads the JSON document in #replay-data (layout: replay/report/_html.py). Never fetches
 * anything. Log text is only ever inserted as text nodes. State lives in the URL hash:
 * #strategy=NAME&request=N&tab=diff|cards (a link opens that turn). */
(function () {
  "use strict";
  const started = performance.now();
  const timings = (window.replayTimings = {});  // milliseconds since navigation start
  const doc = JSON.parse(document.getElementById("replay-data").textContent);
  const specs = JSON.parse(document.getElementById("replay-specs").textContent);
  timings.app_start = Math.round(started);
  timings.data_parsed = Math.round(performance.now());
  const T = doc.texts, ITEMS = doc.items;
  const FIELD = {}, RQ = {};
  doc.recordFields.forEach((name, n) => { FIELD[name] = n; });
  doc.requestFields.forEach((name, n) => { RQ[name] = n; });
  const REQUESTS = new Map(doc.requests.map((r) => [r[RQ.i], r]));
  const PREVIEW = 600;      // characters of an item shown before "show all"
  const FOLD_MIN = 6;       // unchanged runs longer than this are folded

  // ---------- small DOM helpers (text only, never HTML from the log) ----------
  // Bidirectional marks in log text would reorder what the page shows after them (a U+202E
  // can make `gnp.exe` read `exe.png`): shown as `\u202e`, as replay/_printable.py does on a
  // terminal. Only the display changes; the data keeps them, and searches run on the data.
  const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  const shown = (s) => String(s).replace(BIDI, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = shown(v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(typeof c === "string" ? shown(c) : c);
    return node;
  }
  const $ = (id) => document.getElementById(id);
  const fmtInt = (v) => (v === null || v === undefined) ? "" : Number(v).toLocaleString("en-US");
  // Money as the terminal tables write it (replay/report/_money.py `usd`): `places` decimals,
  // halves rounded up on the decimal digits (the tables' cells are exact decimal strings; a
  // float's shortest form gives back the decimal it was made from), thousands grouped, and
  // below the last place two significant digits (two that round up to a power of ten written
  // as that value is: $0.0000999 is $0.0001), never scientific notation.
  function plainDigits(v) {
    if (typeof v === "string" && !/e/i.test(v)) return v.replace(/^-/, "");
    const s = String(Math.abs(Number(v)));
    return /e/i.test(s) ? Math.abs(Number(v)).toFixed(20) : s;
  }
  function roundHalfUp(s, places) {
    const [whole, frac = ""] = s.split(".");
    if (frac.length <= places) return places ? whole + "." + frac.padEnd(places, "0") : whole;
    const digits = (whole + frac.slice(0, places)).split("").map(Number);
    if (frac.charCodeAt(places) >= 53) {  // "5" or more: up
      let i = digits.length - 1;
      for (; i >= 0 && digits[i] === 9; i--) digits[i] = 0;
      if (i >= 0) digits[i] += 1; else digits.unshift(1);
    }
    const all = digits.join(""), cut = all.length - places;
    return places ? all.slice(0, cut) + "." + all.slice(cut) : all;
  }
  function fmtUsd(v, places = 4) {
    if (v === null || v === undefined || v === "") return "";
    const n = Number(v), s = plainDigits(v);
    const sign = n < 0 ? "-$" : "$";
    const [whole0, frac = ""] = s.split(".");
    if (n !== 0 && /^0*$/.test(whole0) && /^0*$/.test(frac.slice(0, places))) {
      // below the last place: two significant digits, counted on the rounded value
      const first = roundHalfUp(s, frac.search(/[1-9]/) + 2).split(".")[1].search(/[1-9]/);
      if (first >= places) places = first + 2;
    }
    const [whole, part] = roundHalfUp(s, places).split(".");
    return sign + whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (part === undefined ? "" : "." + part);
  }
  const fmtPct = (v) => (v === null || v === undefined) ? "" : (100 * v).toFixed(1) + "%";

  // ---------- header ----------
  $("title").textContent = shown(doc.title);
  $("meta").textContent = [
    doc.agent && ("agent " + doc.agent), doc.providers.join(", "), doc.models.join(", "),
    doc.strategies.length + " strategies", "log " + doc.span.join(" → "),
  ].filter(Boolean).map(shown).join(" · ");
  $("recommendation").textContent = shown(doc.recommendation || "");
  for (const note of doc.notes) $("notes").append(el("li", { text: note }));

  // ---------- charts ----------
  const S = doc.strategies;
  const hidden = new Set();
  const views = [];
  function chartRows() {
    const c = doc.series, rows = new Array(c.i.length);
    for (let k = 0; k < c.i.length; k++) {
      rows[k] = { s: S[c.s[k]], i: c.i[k], t: c.t[k], prompt: c.prompt[k], cached: c.cached[k],
        written: c.written[k], uncached: c.uncached[k], cost: c.cost[k], hit: c.hit[k] };
    }
    return rows;
  }
  const tooltip = $("tooltip");
  function showTooltip(handler, event, item, value) {
    if (value === null || value === undefined || value === "") { tooltip.hidden = true; return; }
    tooltip.textContent = "";
    if (typeof value === "object") {
      const table = el("table");
      for (const [k, v] of Object.entries(value)) table.append(el("tr", null, el("td", { text: k }), el("td", { text: String(v) })));
      tooltip.append(table);
    } else tooltip.textContent = shown(value);
    tooltip.hidden = false;
    const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
    const y = Math.min(event.clientY + 14, window.innerHeight - tooltip.offsetHeight - 8);
    tooltip.style.left = x + "px"; tooltip.style.top = y + "px";
  }
  function markRows(rows) {
    const m = doc.marks, at = new Map(), out = [];
    rows.forEach((r) => at.set(r.s + "\u0000" + r.i, r));
    for (let k = 0; k < m.i.length; k++) {
      const r = at.get(S[m.s[k]] + "\u0000" + m.i[k]);
      if (!r) continue;
      out.push({ s: r.s, i: r.i, prompt: r.prompt, cost: r.cost, hit: r.hit,
        m: doc.markKinds[m.m[k]], what: T[m.what[k]], cause: T[m.cause[k]] });
    }
    return out.length ? out : [{}];
  }
  async function renderCharts() {
    const rows = chartRows();
    const marks = markRows(rows);
    for (const metric of Object.keys(specs)) {
      // Let the browser paint what is ready (header, tables, navigator) before each chart.
      await new Promise((resolve) => setTimeout(resolve, 0));
      const container = $("chart-" + metric);
      if (!container) continue;
      // The data goes into the spec's named sources, so the first layout already sees it.
      const spec = specs[metric];
      for (const source of spec.data) {
        if (source.name === "rows") source.values = rows;
        if (source.name === "marks") source.values = marks;
      }
      const embedded = await vegaEmbed(container, spec, {
        mode: "vega", renderer: "svg", actions: false, tooltip: showTooltip,
      });
      const view = embedded.view;
      view.addEventListener("click", (event, item) => {
        const d = item && item.datum;
        if (d && d.i !== undefined) {
          go(d.s !== undefined ? { strategy: d.s, request: d.i } : { request: d.i });
          $("navigator").scrollIntoView({ behavior: "smooth" });
        }
      });
      views.push(view);
      await view.runAsync();
      timings["chart_" + metric] = Math.round(performance.now());
    }
  }
  function applyHidden() {
    for (const v of views) v.signal("hidden", Array.from(hidden)).runAsync();
    document.querySelectorAll(".switch").forEach((node) => {
      node.classList.toggle("off", hidden.has(node.dataset.strategy));
      node.setAttribute("aria-pressed", hidden.has(node.dataset.strategy) ? "false" : "true");
    });
  }
  S.forEach((name, n) => {
    $("switches").append(el("button", {
      class: "switch", "data-strategy": name, "aria-pressed": "true", title: "show / hide " + name,
      onclick: () => { hidden.has(name) ? hidden.delete(name) : hidden.add(name); applyHidden(); },
    }, el("span", { class: "sw", style: "background:" + doc.colors[n] }), name));
  });
  $("show-all").addEventListener("click", (e) => { e.preventDefault(); hidden.clear(); applyHidden(); });
  $("show-none").addEventListener("click", (e) => { e.preventDefault(); S.forEach((s) => hidden.add(s)); applyHidden(); });

  // ---------- sortable tables ----------
  function fmtCell(value, kind) {
    if (value === null || value === undefined) return kind.startsWith("never-") ? "never" : "";
    if (kind.startsWith("never-")) kind = kind.slice(6);
    if (kind === "int") return fmtInt(value);
    if (kind === "usd") return fmtUsd(value);
    if (kind === "usd6") return fmtUsd(value, 6);
    if (kind === "ratio") return fmtPct(value);
    if (kind === "float") return Number(value).toLocaleString("en-US", { maximumFractionDigits: 2 });
    return String(value);
  }
  const TABLE_PAGE = 200;  // rows drawn at first; the rest on demand (sorting sorts them all)
  function compareCells(x, y, kind) {
    const blank = (v) => v === null || v === undefined;
    if (blank(x) || blank(y)) return blank(x) - blank(y);  // blanks (never) last
    if (kind === "text") return String(x).localeCompare(String(y));
    return Number(x) - Number(y);
  }
  function buildTable(table, data, options) {
    options = options || {};
    table.textContent = "";
    const thead = el("thead"), tr = el("tr");
    data.columns.forEach(([key, header, kind, help], n) => {
      tr.append(el("th", { class: kind === "text" ? "text" : null, title: help || null, "data-col": n, "data-kind": kind, text: header }));
    });
    thead.append(tr);
    const tbody = el("tbody");
    const costCol = data.columns.findIndex((c) => c[0] === "cost_usd");
    const cheapest = costCol >= 0 && data.rows.length ? Math.min(...data.rows.map((r) => Number(r[costCol]))) : null;
    const rows = data.rows.slice();
    let limit = TABLE_PAGE;
    const more = el("tfoot");
    function rowElement(row) {
      const rowEl = el("tr", { class: options.onRow ? "clickable" : null });
      // The row the recommendation advises; the lowest cost, whatever its flags, only in bold
      // (as the terminal table writes it).
      if (options.best !== undefined && options.best !== null && row[0] === options.best) rowEl.classList.add("best");
      row.forEach((value, n) => {
        const [key, , kind] = data.columns[n];
        const flag = (key === "blind_actions" || key === "over_window") && value > 0;
        const low = n === costCol && Number(value) === cheapest;
        rowEl.append(el("td", { class: (kind === "text" ? "text" : "") + (flag ? " flag" : "") + (low ? " cheapest" : ""), "data-v": value === null ? "" : String(value), text: fmtCell(value, kind) }));
      });
      if (options.onRow) rowEl.addEventListener("click", () => options.onRow(row));
      return rowEl;
    }
    function draw() {
      tbody.textContent = "";
      const frag = document.createDocumentFragment();
      rows.slice(0, limit).forEach((row) => frag.append(rowElement(row)));
      tbody.append(frag);
      more.textContent = "";
      if (rows.length > limit) {
        const cell = el("td", { colspan: data.columns.length, class: "text" },
          el("a", { href: "#", text: "show all " + fmtInt(rows.length) + " rows (" + fmtInt(rows.length - limit) + " more)",
            onclick: (e) => { e.preventDefault(); limit = rows.length; draw(); } }));
        more.append(el("tr", null, cell));
      }
    }
    draw();
    table.append(thead, tbody, more);
    thead.addEventListener("click", (event) => {
      const th = event.target.closest("th");
      if (!th) return;
      const col = Number(th.dataset.col), kind = th.dataset.kind;
      const asc = th.getAttribute("aria-sort") !== "ascending";
      thead.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      rows.sort((a, b) => {
        const r = compareCells(a[col], b[col], kind);
        // Blanks stay last both ways (for break-even, blank is "never").
        if (a[col] === null || b[col] === null) return r;
        return asc ? r : -r;
      });
      draw();
    });
  }
  buildTable($("summary-table"), doc.summary, {
    best: doc.recommended,
    onRow: (row) => { go({ strategy: row[0] }); $("navigator").scrollIntoView({ behavior: "smooth" }); },
  });
  if (doc.breakeven) {
    buildTable($("breakeven-table"), doc.breakeven, {
      onRow: (row) => { go({ strategy: row[0], request: row[1] }); $("navigator").scrollIntoView({ behavior: "smooth" }); },
    });
  } else {
    $("breakeven-hint").textContent = "Not computed for this report (built with --no-breakeven).";
  }

  // ---------- navigator data ----------
  const decoded = {};  // strategy index -> {views: [...], byRequest: Map}
  function expand(ranges, out) {
    for (let k = 0; k < ranges.length; k += 2) for (let n = 0; n < ranges[k + 1]; n++) out.push(ranges[k] + n);
    return out;
  }
  const histories = doc.histories.map((r) => expand(r, []));
  function strategyData(si) {
    if (decoded[si]) return decoded[si];
    const recs = doc.records[si], last = {}, out = [], byRequest = new Map();
    recs.forEach((r, k) => {
      const enc = r[FIELD.view], thread = REQUESTS.get(r[FIELD.i])[RQ.thread];
      const prev = last[thread] || [];
      const view = expand(enc.slice(1), prev.slice(0, enc[0]));
      last[thread] = view;
      out.push(view);
      byRequest.set(r[FIELD.i], k);
    });
    const offset = doc.series.s.indexOf(si);
    return (decoded[si] = { views: out, byRequest: byRequest, offset: offset });
  }

  // ---------- diff of history (before the strategy) against the view (after it) ----------
  function align(hist, view) {
    const inView = new Set(view);
    const histPos = new Map(), histByEvent = new Map();
    hist.forEach((id, p) => { histPos.set(id, p); const ev = ITEMS[id][3]; if (ev >= 0 && !histByEvent.has(ev)) histByEvent.set(ev, p); });
    const anchor = view.map((id) => {
      if (histPos.has(id)) return histPos.get(id);
      const ev = ITEMS[id][3];
      if (ev >= 0 && histByEvent.has(ev) && !inView.has(hist[histByEvent.get(ev)])) return histByEvent.get(ev);
      return -1;
    });
    const paired = new Set(anchor.filter((a) => a >= 0));
    const out = [];
    let h = 0;
    const flush = (stop) => {
      for (; h < stop; h++) if (!paired.has(h) && !inView.has(hist[h])) out.push({ op: "removed", hist: hist[h] });
    };
    view.forEach((id, k) => {
      const a = anchor[k];
      if (a < 0) {
        let next = hist.length;
        for (let j = k + 1; j < view.length; j++) if (anchor[j] >= 0) { next = anchor[j]; break; }
        flush(next);
        out.push({ op: "added", view: id, pos: k });
      } else {
        flush(a);
        out.push(view[k] === hist[a] ? { op: "same", view: id, pos: k } : { op: "changed", hist: hist[a], view: id, pos: k });
        h = Math.max(h, a + 1);
      }
    });
    flush(hist.length);
    return out;
  }

  // ---------- rendering of items ----------
  const ROLE = { u: "user", a: "assistant", t: "tool result", s: "summary", "?": "item" };
  function itemTitle(id) {
    const [kind, , label, , , original, flags] = ITEMS[id];
    let title = ROLE[kind] || kind;
    if (label && T[label]) title += " · " + T[label];
    if (flags & 8) title += " (not in the log)";
    else if (flags & 16) title += " (re-sent by the logged compaction)";
    else if (flags & 2) title += " (injected)";
    if (flags & 4) title += " (error)";
    if (flags & 1) title += " (shortened from " + fmtInt(original) + " chars)";
    return title;
  }
  function itemSize(id) {
    const it = ITEMS[id];
    return it[4] >= 0 ? fmtInt(it[4]) + " tok" : fmtInt(T[it[1]].length) + " chars";
  }
  function highlight(text, fragments) {
    // Text nodes with <mark> around every occurrence of a fragment.
    const frag = document.createDocumentFragment();
    if (!fragments.length) { frag.append(shown(text)); return frag; }
    const hits = [];
    for (const f of fragments) {
      let at = text.indexOf(f);
      while (at >= 0 && hits.length < 500) { hits.push([at, at + f.length]); at = text.indexOf(f, at + f.length); }
    }
    hits.sort((a, b) => a[0] - b[0]);
    let pos = 0;
    for (const [s, e] of hits) {
      if (s < pos) continue;
      frag.append(shown(text.slice(pos, s)), el("mark", { text: text.slice(s, e) }));
      pos = e;
    }
    frag.append(shown(text.slice(pos)));
    return frag;
  }
  function usesFragment(text, fragments) {
    return fragments.some((f) => text.includes(f));
  }
  function textBlock(text, fragments, forceOpen, preview) {
    preview = preview || PREVIEW;
    const pre = el("pre");
    const long = text.length > preview && !forceOpen;
    pre.append(highlight(long ? text.slice(0, preview) : text, fragments));
    if (!long) return [pre];
    const more = el("span", { class: "more", text: "show all " + fmtInt(text.length) + " chars" });
    more.addEventListener("click", () => { pre.textContent = ""; pre.append(highlight(text, fragments)); more.remove(); });
    return [pre, more];
  }
  function changedBlock(oldText, newText, fragments) {
    // Common prefix and suffix in grey; what the strategy removed in red, what it added in green.
    let p = 0;
    const max = Math.min(oldText.length, newText.length);
    while (p < max && oldText[p] === newText[p]) p++;
    let s = 0;
    while (s < max - p && oldText[oldText.length - 1 - s] === newText[newText.length - 1 - s]) s++;
    const pre = el("pre");
    const head = oldText.slice(0, p), tail = oldText.slice(oldText.length - s);
    pre.append(el("span", { class: "same-text", text: head.length > PREVIEW ? "…" + head.slice(-PREVIEW) : head }));
    const removed = oldText.slice(p, oldText.length - s), added = newText.slice(p, newText.length - s);
    const del = el("del");
    del.append(highlight(removed.length > 4 * PREVIEW ? removed.slice(0, 4 * PREVIEW) + "…[" + fmtInt(removed.length) + " chars]" : removed, fragments));
    pre.append(del, el("ins", { text: added }), el("span", { text: tail.length > PREVIEW ? tail.slice(0, PREVIEW) + "…" : tail }));
    return [pre];
  }
  function entry(op, e, fragments) {
    const id = op === "removed" ? e.hist : e.view;
    const text = T[ITEMS[id][1]];
    const hiddenText = op === "removed" ? text : (op === "changed" ? T[ITEMS[e.hist][1]] : "");
    const used = fragments.length && hiddenText && usesFragment(hiddenText, fragments);
    // Context the log lacks, and messages the log's own compaction re-sent, are in the views,
    // not in the history: "added", but not by the strategy.
    const estimated = op === "added" && (ITEMS[id][6] & 8);
    const rebuilt = op === "added" && !estimated && (ITEMS[id][6] & 16);
    const why = estimated ? "estimated from the provider's usage, not added by the strategy"
      : rebuilt ? "re-sent by the log's own compaction, not added by the strategy"
      : { same: "unchanged", removed: "removed by the strategy", added: "added by the strategy", changed: "rewritten by the strategy" }[op];
    const node = el("div", { class: "entry " + (estimated || rebuilt ? "estimated" : op), "data-op": op, "data-pos": e.pos === undefined ? null : e.pos },
      el("div", { class: "head" },
        el("span", { class: "role", text: itemTitle(id) }),
        el("span", { text: why }),
        used ? el("span", { class: "badge", text: "hidden text the agent used" }) : null,
        el("span", { class: "size", text: itemSize(id) })));
    if (op === "changed") node.append(...changedBlock(T[ITEMS[e.hist][1]], text, fragments));
    else node.append(...textBlock(text, op === "removed" ? fragments : [], used, op === "removed" ? 240 : PREVIEW));
    if (op === "same") {
      const pre = node.querySelector("pre");
      pre.hidden = true;
      const more = node.querySelector(".more");
      if (more) more.hidden = true;
      node.querySelector(".head").addEventListener("click", () => { pre.hidden = !pre.hidden; if (more) more.hidden = pre.hidden; });
    }
    return node;
  }
  function mismatchNode(rec) {
    const where = rec[FIELD.where];
    const text = where === "tail"
      ? "▼ first mismatch vs the previous request: new content from token " + fmtInt(rec[FIELD.fm]) + " (prefix kept)"
      : "▼ first mismatch vs the previous request: token " + fmtInt(rec[FIELD.fm]) + " (" + where + ") — the cache cannot be read past here";
    return el("div", { class: "mismatch", id: "first-mismatch", text: text });
  }

  // ---------- navigator UI ----------
  const state = { strategy: S[0], request: null, tab: "diff" };
  const selStrategy = $("nav-strategy"), inRequest = $("nav-request"), slider = $("nav-slider");
  S.forEach((name) => selStrategy.append(el("option", { value: name, text: name })));
  function requestsOf(si) { return doc.records[si].map((r) => r[FIELD.i]); }

  function renderTurn() {
    const si = Math.max(0, S.indexOf(state.strategy));
    state.strategy = S[si];
    const data = strategyData(si);
    const requests = requestsOf(si);
    if (!requests.length) return;
    let k = data.byRequest.get(state.request);
    if (k === undefined) {  // nearest recorded request
      const want = state.request === null ? requests[0] : state.request;
      k = 0;
      requests.forEach((r, n) => { if (Math.abs(r - want) < Math.abs(requests[k] - want)) k = n; });
    }
    const rec = doc.records[si][k];
    state.request = rec[FIELD.i];
    selStrategy.value = state.strategy;
    inRequest.value = state.request;
    inRequest.min = requests[0]; inRequest.max = requests[requests.length - 1];
    slider.min = 0; slider.max = requests.length - 1; slider.value = k;
    document.querySelectorAll(".tab").forEach((b) => b.classList.toggle("active", b.dataset.tab === state.tab));

    const row = data.offset + k, c = doc.series;
    const view = data.views[k];
    const rq = REQUESTS.get(rec[FIELD.i]);
    const thread = doc.threads[rq[RQ.thread]];
    const hist = histories[rq[RQ.thread]].slice(0, rq[RQ.h]);
    const current = $("nav-current");
    current.dataset.strategy = state.strategy;
    current.dataset.request = String(state.request);
    current.textContent = state.strategy + " · request " + state.request + " (" + shown(rq[RQ.id]) + ")" + (doc.threads.length > 1 ? " · thread " + thread : "");

    const facts = $("nav-facts");
    facts.textContent = "";
    const fact = (label, value) => facts.append(label + " ", el("b", { text: value }), "  ·  ");
    fact("prompt", fmtInt(c.prompt[row]) + " tok");
    fact("cached", fmtInt(c.cached[row]));
    fact("written", fmtInt(c.written[row]));
    fact("uncached", fmtInt(c.uncached[row]));
    fact("output", fmtInt(rec[FIELD.out]));
    fact("cost", fmtUsd(rec[FIELD.req_cost]));
    fact("cumulative", fmtUsd(c.cost[row]));
    fact("history", fmtInt(hist.length) + " items → view " + fmtInt(view.length));
    facts.append(el("span", { text: doc.requestModels[rq[RQ.model]] + " · " + rq[RQ.ts] }), el("br"));
    if (rec[FIELD.over]) facts.append(el("span", { class: "pill miss", text: "over the context window" }));
    const miss = rec[FIELD.miss] === null ? null : T[rec[FIELD.miss]];
    if (miss) facts.append(el("span", { class: miss === "cold start" ? "pill" : "pill miss", text: miss === "cold start" ? "cold start (nothing cached yet)" : "cache miss: " + miss }));
    for (const ev of rec[FIELD.events]) facts.append(el("span", { class: "pill event", text: "rewrite · " + T[ev] }));
    const summ = rec[FIELD.summ];
    if (summ[0]) facts.append(el("span", { class: "pill event", text: summ[0] + " summarizer call(s) before this request: " + fmtUsd(summ[1]) }));

    const blind = rec[FIELD.blind];
    const fragments = [];
    const blindBox = $("nav-blind");
    blindBox.textContent = "";
    const BLIND = {
      "hidden-edit-target": "the recorded edit changed text this view hid (highlighted below):",
      "hidden-quote": "the recorded call quoted names that only hidden text contained (highlighted below):",
      "stubbed-read": "the file being changed was shown only as this stub: a real agent would have had to read it again.",
      "hidden-mention": "the recorded response's own text named what only hidden text held (highlighted below); not an action, not counted as one:",
    };
    for (const [kind, tool, path, excerptId, frags] of blind) {
      const excerpt = T[excerptId];
      fragments.push(...frags.map((f) => T[f]));
      blindBox.append(el("div", { class: "blind", "data-kind": kind },
        el("b", { text: kind === "hidden-mention" ? "Hidden mention" : "Blind action · " + kind }), (tool ? " — " + tool + (path ? " on " + path : "") : "") + ": " + (BLIND[kind] || "the recorded response relied on text this view hid:"),
        el("pre", { text: excerpt })));
    }

    const body = $("nav-body");
    body.textContent = "";
    const mm = rec[FIELD.mm];
    if (mm !== null) {
      facts.append(el("a", { href: "#", class: "pill", text: "↓ first mismatch (token " + fmtInt(rec[FIELD.fm]) + ")",
        onclick: (e) => { e.preventDefault(); const m = $("first-mismatch"); if (m) m.scrollIntoView({ behavior: "smooth", block: "center" }); } }));
    }
    if (state.tab === "diff") {
      body.append(el("div", { class: "legend" },
        el("span", { class: "entry-key", text: "grey: unchanged" }), el("span", { style: "color:var(--red)", text: "red: removed" }),
        el("span", { style: "color:var(--green)", text: "green: added" }), el("span", { style: "color:#9a6700", text: "amber: rewritten in place" }),
        el("span", null, el("mark", { text: "highlight" }), ": hidden text the agent later used")));
      renderDiff(body, align(hist, view), fragments, rec, mm);
    } else {
      renderCards(body, view, rec, mm, fragments);
    }
    const hash = "#strategy=" + encodeURIComponent(state.strategy) + "&request=" + state.request + (state.tab !== "diff" ? "&tab=" + state.tab : "");
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  function renderDiff(body, ops, fragments, rec, mm) {
    // Every change is shown; long runs of unchanged (or removed) items are folded, keeping two
    // items of context on each side, unless they hold the first mismatch or hidden text used later.
    const fold = $("nav-fold").checked;
    const foldable = (e) => (e.op === "same" && e.pos !== mm) ||
      (e.op === "removed" && !(fragments.length && usesFragment(T[ITEMS[e.hist][1]], fragments)));
    let run = [];
    const flushRun = () => {
      if (!run.length) return;
      if (!fold || run.length <= FOLD_MIN) { run.forEach((e) => body.append(entry(e.op, e, fragments))); run = []; return; }
      const head = run.slice(0, 2), tail = run.slice(-2), middle = run.slice(2, -2);
      head.forEach((e) => body.append(entry(e.op, e, fragments)));
      const tokens = middle.reduce((n, e) => n + Math.max(0, ITEMS[e.op === "removed" ? e.hist : e.view][4]), 0);
      const what = run[0].op === "removed" ? "removed" : "unchanged";
      const folded = el("div", { class: "fold " + what, text: "… " + fmtInt(middle.length) + " " + what + " items (" + fmtInt(tokens) + " tokens) — click to show" });
      folded.addEventListener("click", () => { const frag = document.createDocumentFragment(); middle.forEach((e) => frag.append(entry(e.op, e, fragments))); folded.replaceWith(frag); });
      body.append(folded);
      tail.forEach((e) => body.append(entry(e.op, e, fragments)));
      run = [];
    };
    if (rec[FIELD.where] === "first") body.append(el("div", { class: "legend", text: "First request of this thread: nothing to compare with." }));
    if (mm === -1) body.append(mismatchNode(rec));
    ops.forEach((e) => {
      if (foldable(e)) {
        if (run.length && run[0].op !== e.op) flushRun();
        run.push(e);
        return;
      }
      flushRun();
      if (mm !== null && mm >= 0 && e.pos === mm) body.append(mismatchNode(rec));
      body.append(entry(e.op, e, fragments));
    });
    flushRun();
  }

  function renderCards(body, view, rec, mm, fragments) {
    const sys = doc.system;
    const sysCard = el("div", { class: "card r-sys" },
      el("div", { class: "head" }, el("span", { class: "role", text: "tools + system prompt" }),
        el("span", { text: sys.tools.length + " tool definition(s): " + sys.tools.join(", ") }),
        el("span", { class: "size", text: fmtInt(rec[FIELD.sys]) + " tok" })));
    sysCard.append(...textBlock(T[sys.text], [], false));
    body.append(sysCard);
    if (mm === -1) body.append(mismatchNode(rec));
    view.forEach((id, pos) => {
      if (pos === mm) body.append(mismatchNode(rec));
      const kind = ITEMS[id][0];
      const card = el("div", { class: "card r-" + kind, "data-pos": pos },
        el("div", { class: "head" }, el("span", { class: "role", text: "#" + pos + " " + itemTitle(id) }),
          el("span", { class: "size", text: itemSize(id) })));
      card.append(...textBlock(T[ITEMS[id][1]], fragments, false));
      body.append(card);
    });
  }

  function go(changes) {
    Object.assign(state, changes);
    renderTurn();
  }
  function readHash() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    const out = {};
    if (params.has("strategy") && S.includes(params.get("strategy"))) out.strategy = params.get("strategy");
    if (params.has("request") && params.get("request") !== "" && !isNaN(Number(params.get("request")))) out.request = Number(params.get("request"));
    if (params.has("tab") && ["diff", "cards"].includes(params.get("tab"))) out.tab = params.get("tab");
    return out;
  }
  selStrategy.addEventListener("change", () => go({ strategy: selStrategy.value }));
  inRequest.addEventListener("change", () => go({ request: Number(inRequest.value) }));
  slider.addEventListener("input", () => { const si = S.indexOf(state.strategy); go({ request: requestsOf(si)[Number(slider.value)] }); });
  function step(delta) {
    const si = S.indexOf(state.strategy), reqs = requestsOf(si);
    const k = Math.min(reqs.length - 1, Math.max(0, strategyData(si).byRequest.get(state.request) + delta));
    go({ request: reqs[k] });
  }
  $("nav-prev").addEventListener("click", () => step(-1));
  $("nav-next").addEventListener("click", () => step(1));
  $("nav-fold").addEventListener("change", () => renderTurn());
  document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => go({ tab: b.dataset.tab })));
  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, select, textarea")) return;
    if (e.key === "ArrowLeft") step(-1);
    if (e.key === "ArrowRight") step(1);
  });
  window.addEventListener("hashchange", () => go(readHash()));

  const linked = readHash();  // a link to a turn opens the page at the navigator
  go(linked);
  timings.navigator = Math.round(performance.now());
  if (linked.strategy !== undefined || linked.request !== undefined) $("navigator").scrollIntoView();
  renderCharts().then(() => {
    timings.charts = Math.round(performance.now());
    document.body.dataset.ready = "1";
  }, (err) => {
    document.body.dataset.ready = "error";
    document.body.dataset.error = String(err);
    console.error(err);
  });
})();
