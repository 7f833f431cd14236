// revkv's page. Every value the store holds reaches the DOM as text
// (textContent, attribute values), never as markup. No framework, no
// build step; the API under /api/ does the work.
"use strict";

const body = document.body;
const view = document.getElementById("view");
const params = new URLSearchParams(location.search);
const live = body.dataset.live === "true";
const SVGNS = "http://www.w3.org/2000/svg";

// el builds an element: attrs set as attributes (on: a map of listeners),
// children appended (strings as text nodes).
function el(tag, attrs, ...children) {
  const n = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") { for (const [ev, fn] of Object.entries(v)) n.addEventListener(ev, fn); continue; }
    n.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

async function api(path, q) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(q || {})) if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, v);
  const r = await fetch(u, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  let j;
  try { j = await r.json(); } catch (e) { throw new Error(`${path}: HTTP ${r.status}`); }
  if (!r.ok) throw new Error(j.error || `HTTP ${r.status}`);
  return j;
}

function errorBox(e) { return el("p", { class: "error", role: "alert" }, String(e.message || e)); }
function show(...nodes) { view.replaceChildren(...nodes); }
function fmtInt(n) { return Number(n).toLocaleString("en-US"); }

// keyQuery names a key in a URL: key, or key_b64 for bytes that are not UTF-8.
function keyQuery(o, name = "key") { return o.key_b64 ? { [name + "_b64"]: o.key_b64 } : { [name]: o.key }; }
function href(path, q) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== "") u.set(k, v);
  const s = u.toString();
  return s ? `${path}?${s}` : path;
}
function keyLink(o, extra) { return el("a", { href: href("/key", { ...keyQuery(o), ...extra }) }, o.key); }
function opTag(op) { return el("span", { class: `tag op-${op}` }, op); }
function timeCell(t) { return el("td", { class: "time-cell" }, t || ""); }

// valueNode shows a rendered value: text, pretty JSON, or hex (base64 on demand).
function valueNode(v, entry, spans) {
  if (!v) return el("span", { class: "muted" }, "—");
  const pre = el("pre", { class: `value kind-${v.kind}` });
  if (spans) {
    for (const s of spans) pre.append(s.changed ? el("mark", { class: spans.cls }, s.text) : document.createTextNode(s.text));
  } else {
    pre.textContent = v.text;
  }
  const out = [pre];
  if (v.kind === "binary") {
    out.push(el("details", {}, el("summary", { class: "cutnote" }, `binary, ${fmtInt(v.size)} bytes: shown in hex; base64`),
      el("pre", { class: "value" }, v.base64)));
  }
  if (v.cut && entry) {
    out.push(el("div", { class: "cutnote" }, `Cut: ${fmtInt(v.size)} bytes in all. `,
      el("a", { href: href("/entry", { ...keyQuery(entry), rev: entry.rev }) }, "See it whole"), " or ",
      el("a", { href: href("/api/value", { ...keyQuery(entry), rev: entry.rev }) }, "download it"), "."));
  }
  return el("div", {}, out);
}

function notesNode(notes) {
  if (!notes) return null;
  return el("div", { class: "notes" }, Object.keys(notes).sort().map((k) => el("div", {}, `${k}: ${notes[k]}`)));
}

// --- head: the latest revision, kept up to date on a live store.
let info = null;
async function loadHead() {
  try {
    info = await api("/api/info");
    document.getElementById("head").textContent = `revision ${fmtInt(info.rev)}${info.time ? " · " + info.time : ""}${info.live ? " · live" : ""}`;
  } catch (e) { document.getElementById("head").textContent = String(e.message); }
  return info;
}

// --- keys
async function viewKeys() {
  const prefix = params.get("prefix") || "", q = params.get("q") || "", after = params.get("after") || "";
  const form = el("form", { class: "bar", method: "get", action: "/" },
    el("label", {}, "Prefix", el("input", { name: "prefix", value: prefix, placeholder: "config/", autocomplete: "off" })),
    el("label", {}, "Key contains", el("input", { name: "q", value: q, type: "search", autocomplete: "off" })),
    el("button", { type: "submit" }, "Show"));
  show(el("h1", {}, "Keys"), form, el("p", { class: "muted" }, "Loading…"));
  let r;
  try { r = await api("/api/keys", { prefix, q, after }); } catch (e) { show(el("h1", {}, "Keys"), form, errorBox(e)); return; }
  const crumbs = [el("a", { href: "/" }, "(all)")];
  let acc = "";
  for (const part of prefix.split("/").slice(0, -1)) {
    acc += part + "/";
    crumbs.push(" ", el("a", { href: href("/", { prefix: acc }) }, acc));
  }
  const summary = el("div", { class: "summary", id: "key-summary" },
    el("span", {}, el("b", { id: "live-keys" }, fmtInt(r.live_keys)), " live keys"),
    el("span", {}, el("b", { id: "revisions" }, fmtInt(r.revisions)), " revisions"),
    el("span", {}, el("b", {}, fmtInt(r.keys_total)), " keys in history"),
    q ? el("span", {}, el("b", {}, fmtInt(r.matched)), ` match “${q}”`) : null,
    el("span", { class: "muted" }, `under “${prefix}” at revision ${fmtInt(r.rev)}`));
  const rows = r.keys.map((k) => el("tr", {},
    el("td", { class: "key" }, keyLink(k)),
    el("td", {}, k.live ? el("span", { class: "tag op-put" }, "live") : el("span", { class: "tag muted" }, "gone")),
    el("td", { class: "num" }, fmtInt(k.revisions)),
    el("td", {}, opTag(k.last_op), " ", el("a", { href: href("/key", { ...keyQuery(k), from: Math.max(k.last_rev - 50, 0) }) }, `rev ${fmtInt(k.last_rev)}`)),
    el("td", { class: "time-cell hide-narrow" }, k.last_time),
    el("td", { class: "time-cell hide-narrow" }, k.expires_at || "")));
  const table = el("div", { class: "tablewrap" }, el("table", { id: "keys" },
    el("thead", {}, el("tr", {}, el("th", {}, "Key"), el("th", {}, "Now"), el("th", { class: "num" }, "Revisions"),
      el("th", {}, "Last change"), el("th", { class: "hide-narrow" }, "When"), el("th", { class: "hide-narrow" }, "Expires"))),
    el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No keys here.")))));
  const pager = el("div", { class: "pager" },
    after ? el("a", { href: href("/", { prefix, q }) }, "First page") : null,
    r.next_after ? el("a", { href: href("/", { prefix, q, after: r.next_after }), rel: "next" }, "Next page") : null);
  const kids = r.children.length ? el("nav", { class: "children", "aria-label": "Prefixes below" },
    r.children.map((c) => el("a", { href: href("/", { prefix: c.prefix, q }), class: "child" }, c.prefix.slice(prefix.length), el("span", { class: "muted" }, ` ${fmtInt(c.keys)}`)))) : null;
  show(el("h1", {}, "Keys"), form, el("p", {}, "Prefix: ", crumbs), kids, summary, table, pager);
}

// --- a key's timeline
const timeline = { key: null, q: null, from: null, to: null, data: null, selected: null };

async function viewKey() {
  const q = params.get("key_b64") ? { key_b64: params.get("key_b64") } : { key: params.get("key") || "" };
  timeline.q = q;
  timeline.from = params.get("from") || "";
  timeline.to = params.get("to") || "";
  timeline.selected = params.get("rev") || null;
  await drawKey();
}

async function drawKey(push) {
  const t = timeline;
  const started = performance.now();
  let r;
  try {
    r = await api("/api/timeline", { ...t.q, from: t.from, to: t.to });
  } catch (e) { show(el("h1", {}, "Key"), errorBox(e)); return; }
  t.data = r;
  t.key = r.key;
  if (push) {
    history.pushState(null, "", href("/key", { ...t.q, from: t.from, to: t.to }));
  }
  const w = r.window;
  const controls = el("div", { class: "controls", role: "toolbar", "aria-label": "Timeline" },
    el("button", { id: "older", on: { click: () => page(-1) }, disabled: !w.n || w.from_rev <= r.first_rev, title: "Older entries (←)" }, "← Older"),
    el("button", { id: "zoom-in", on: { click: () => zoom(0.5) }, disabled: w.n < 2, title: "Zoom in (+)" }, "Zoom in"),
    el("button", { id: "zoom-out", on: { click: () => zoom(2) }, disabled: !w.n || (w.from_rev <= r.first_rev && w.to_rev >= r.last_rev), title: "Zoom out (−)" }, "Zoom out"),
    el("button", { id: "newer", on: { click: () => page(1) }, disabled: !w.n || w.to_rev >= r.last_rev, title: "Newer entries (→)" }, "Newer →"),
    el("button", { id: "whole", on: { click: () => { t.from = ""; t.to = ""; drawKey(true); } } }, "Whole history"));
  const summary = el("div", { class: "summary" },
    el("span", {}, el("b", {}, fmtInt(r.count)), " entries in all, revisions ", fmtInt(r.first_rev), "–", fmtInt(r.last_rev)),
    el("span", {}, "shown: ", el("b", { id: "shown" }, fmtInt(w.n)), ` (${fmtInt(w.puts)} puts, ${fmtInt(w.deletes)} deletes, ${fmtInt(w.expires)} expiries)`),
    el("span", { class: "muted" }, r.marks ? "each entry drawn" : "too many to draw one by one: counted per column, click one to zoom in"));
  const svg = r.marks ? drawMarks(r) : drawBins(r);
  const legend = el("div", { class: "legend", "aria-hidden": "true" },
    legendItem("put", "put"), legendItem("delete", "delete"), legendItem("expire", "expiry"),
    legendItem("ttl", "TTL, to its exact expiry (dashed: replaced before)"), legendItem("flag", "annotated"));
  const detail = el("div", { id: "detail", class: "panel", "aria-live": "polite" },
    el("span", { class: "muted" }, r.marks ? "Click a mark, or focus it and press Enter, to see its entry." : "Zoom in to see the entries."));
  const list = r.marks ? entryTable(r.marks) : null;
  show(el("h1", {}, "Key ", el("code", { id: "key-name" }, r.key)), summary, controls, svg, legend, detail,
    list ? el("h2", {}, "Entries shown") : null, list);
  // For the browser test's measure: ms from the request to the drawing, and since the page's navigation began.
  svg.dataset.renderMs = String(Math.round(performance.now() - started));
  svg.dataset.sinceNavigation = String(Math.round(performance.now()));
  svg.dataset.rendered = "1";
  if (t.selected && r.marks) {
    const m = r.marks.find((m) => String(m.rev) === String(t.selected));
    if (m) select(m);
  }
}

function legendItem(kind, label) {
  const s = el("svg:svg", { width: 18, height: 14, viewBox: "-9 -7 18 14", class: "timeline-legend" });
  if (kind === "ttl") s.append(el("svg:line", { x1: -8, x2: 8, y1: 0, y2: 0, class: "ttl", stroke: "currentColor" }));
  else if (kind === "flag") s.append(el("svg:path", { d: "M-3 6V-6L5 -3L-3 0", class: "flag", fill: "currentColor" }));
  else s.append(shape(kind, 0, 0));
  return el("span", { class: kind === "flag" ? "notes" : `op-${kind}` }, s, " ", label);
}

// shape draws one mark: a circle for a put, a square for a delete, a
// triangle for an expiry.
function shape(op, x, y) {
  if (op === "put") return el("svg:circle", { cx: x, cy: y, r: 6, class: "shape" });
  if (op === "delete") return el("svg:rect", { x: x - 6, y: y - 6, width: 12, height: 12, class: "shape" });
  return el("svg:path", { d: `M${x} ${y - 7}L${x + 7} ${y + 6}L${x - 7} ${y + 6}Z`, class: "shape" });
}

// The drawing is as wide as the view in CSS pixels (so that marks and text
// keep their size on a phone), H high, with the axis at AXIS.
let W = 1000;
const H = 140, PAD = 40, AXIS = 92;
function setWidth() { W = Math.max(320, Math.min(1240, view.clientWidth || 1000)); }

// scale maps ns (as Numbers; exact times are kept as strings elsewhere) to x.
function scale(t0, t1) {
  if (t1 <= t0) { t0 -= 1e9; t1 += 1e9; }
  return { t0, t1, x: (t) => PAD + ((t - t0) / (t1 - t0)) * (W - 2 * PAD) };
}

// axisLabels draws the axis with the times of its ends and, where there is
// room, of ticks between (to the millisecond; each entry's exact time is
// in its title and its row).
function axisLabels(svg, sc) {
  svg.append(el("svg:line", { x1: PAD, x2: W - PAD, y1: AXIS, y2: AXIS, class: "axis" }));
  const fmt = (ns) => new Date(ns / 1e6).toISOString().replace("T", " ").replace("Z", "");
  const ticks = Math.max(1, Math.floor((W - 2 * PAD) / 260));
  for (let i = 0; i <= ticks; i++) {
    const t = sc.t0 + ((sc.t1 - sc.t0) * i) / ticks, x = sc.x(t);
    const anchor = i === 0 ? "start" : i === ticks ? "end" : "middle";
    svg.append(el("svg:line", { x1: x, x2: x, y1: AXIS, y2: AXIS + 5, class: "axis" }));
    svg.append(el("svg:text", { x, y: AXIS + 22, "text-anchor": anchor }, fmt(t) + (i === ticks ? " UTC" : "")));
  }
}

function drawMarks(r) {
  setWidth();
  const marks = r.marks;
  let t0 = Number(marks[0].time_ns), t1 = Number(marks[marks.length - 1].time_ns);
  // Room for TTLs that end after the last entry, within three widths.
  const room = Math.max(t1 - t0, 2e9) * 3;
  for (const m of marks) if (m.expires_ns) t1 = Math.max(t1, Math.min(Number(m.expires_ns), Number(marks[marks.length - 1].time_ns) + room));
  const sc = scale(t0, t1);
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "timeline", id: "timeline", role: "group",
    "aria-label": `Timeline of ${r.key}: ${marks.length} entries` });
  axisLabels(svg, sc);
  const ttls = el("svg:g", { class: "ttls" });
  svg.append(ttls);
  marks.forEach((m, i) => {
    const x = sc.x(Number(m.time_ns));
    if (m.op === "put" && m.expires_ns) {
      const end = Number(m.expires_ns);
      const cancelled = m.next_ns && Number(m.next_ns) < end;
      const ex = Math.min(sc.x(end), W - PAD + 20);
      ttls.append(el("svg:line", { x1: x, x2: ex, y1: AXIS - 28, y2: AXIS - 28, class: cancelled ? "ttl cancelled" : "ttl",
        "data-rev": m.rev, "data-expires": m.expires_at },
        el("svg:title", {}, `TTL of revision ${m.rev}: expires at ${m.expires_at}${cancelled ? " (replaced before)" : ""}`)));
      if (end <= sc.t1) ttls.append(el("svg:line", { x1: ex, x2: ex, y1: AXIS - 36, y2: AXIS - 20, class: "ttl-end" }));
      else ttls.append(el("svg:text", { x: W - PAD + 20, y: AXIS - 36, "text-anchor": "end" }, `expires ${m.expires_at} →`));
    }
    const label = `${m.op} at revision ${m.rev}, ${m.time}` + (m.notes ? "; " + Object.entries(m.notes).map(([k, v]) => `${k}: ${v}`).join(", ") : "");
    const g = el("svg:g", { class: `mark ${m.op}${m.notes ? " noted" : ""}`, tabindex: 0, role: "button", "aria-label": label,
      "data-rev": m.rev, "data-i": i,
      on: {
        click: () => select(m),
        keydown: (ev) => {
          if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(m); }
          if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
            ev.preventDefault(); ev.stopPropagation();
            const next = svg.querySelector(`.mark[data-i="${i + (ev.key === "ArrowRight" ? 1 : -1)}"]`);
            if (next) next.focus();
          }
        },
      } },
    el("svg:title", {}, label), shape(m.op, x, AXIS));
    if (m.notes) {
      g.append(el("svg:path", { d: `M${x} ${AXIS - 8}V${AXIS - 22}L${x + 9} ${AXIS - 18}L${x} ${AXIS - 14}`, class: "flag" }));
      if (marks.length <= 40) { // room to name who (or the first annotation) above the flag
        const k = "who" in m.notes ? "who" : Object.keys(m.notes).sort()[0];
        const v = String(m.notes[k]);
        g.append(el("svg:text", { x: x + 2, y: AXIS - 46 - (i % 2) * 14, class: "note-label" }, v.length > 24 ? v.slice(0, 23) + "…" : v));
      }
    }
    svg.append(g);
  });
  return svg;
}

function drawBins(r) {
  setWidth();
  const sc = scale(Number(r.t0_ns), Number(r.t1_ns));
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "timeline", id: "timeline", role: "group",
    "aria-label": `Timeline of ${r.key}: ${r.window.n} entries, counted in columns` });
  axisLabels(svg, sc);
  const most = Math.max(...r.bins.map((b) => b.puts + b.deletes + b.expires), 1);
  const bw = (W - 2 * PAD) / r.bins.length;
  r.bins.forEach((b, i) => {
    const n = b.puts + b.deletes + b.expires;
    if (!n) return;
    const x = PAD + i * bw;
    const hgt = (c) => (c ? Math.max(2, (Math.log1p(c) / Math.log1p(most)) * (AXIS - 20) * (c / n)) : 0);
    const g = el("svg:g", { class: "bin", tabindex: 0, role: "button", "data-from": b.from_rev, "data-to": b.to_rev,
      "aria-label": `revisions ${b.from_rev} to ${b.to_rev}: ${b.puts} puts, ${b.deletes} deletes, ${b.expires} expiries; zoom in`,
      on: {
        click: () => zoomTo(b.from_rev, b.to_rev),
        keydown: (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); zoomTo(b.from_rev, b.to_rev); } },
      } },
    el("svg:title", {}, `revisions ${b.from_rev}–${b.to_rev}: ${b.puts} puts, ${b.deletes} deletes, ${b.expires} expiries`),
    el("svg:rect", { x, y: 10, width: bw, height: AXIS - 10, class: "hit" }));
    let y = AXIS;
    for (const k of ["puts", "deletes", "expires"]) {
      const h = hgt(b[k]);
      if (!h) continue;
      y -= h;
      g.append(el("svg:rect", { x: x + 1, y, width: Math.max(bw - 2, 1), height: h, class: k.slice(0, -1) }));
    }
    svg.append(g);
  });
  return svg;
}

function entryTable(marks) {
  const rows = marks.slice().reverse().map((m) => el("tr", { "data-rev": m.rev },
    el("td", { class: "num" }, el("a", { href: href("/key", { ...timeline.q, from: timeline.from, to: timeline.to, rev: m.rev }),
      on: { click: (ev) => { ev.preventDefault(); select(m); } } }, fmtInt(m.rev))),
    el("td", {}, opTag(m.op)),
    timeCell(m.time),
    el("td", {}, valueNode(m.value, m)),
    el("td", { class: "time-cell hide-narrow" }, m.expires_at || ""),
    el("td", { class: "hide-narrow" }, notesNode(m.notes))));
  return el("div", { class: "tablewrap" }, el("table", { id: "entries" },
    el("thead", {}, el("tr", {}, el("th", { class: "num" }, "Rev"), el("th", {}, "Op"), el("th", {}, "Time (UTC)"),
      el("th", {}, "Value"), el("th", { class: "hide-narrow" }, "Expires"), el("th", { class: "hide-narrow" }, "Annotations"))),
    el("tbody", {}, rows)));
}

function select(m) {
  timeline.selected = m.rev;
  document.querySelectorAll(".timeline .mark.selected, #entries tr.selected").forEach((n) => n.classList.remove("selected"));
  document.querySelectorAll(`.timeline .mark[data-rev="${m.rev}"], #entries tr[data-rev="${m.rev}"]`).forEach((n) => n.classList.add("selected"));
  const d = document.getElementById("detail");
  d.replaceChildren(entryPanel(m));
}

function entryPanel(m) {
  const dl = el("dl", {},
    el("dt", {}, "Revision"), el("dd", { id: "detail-rev" }, String(m.rev)),
    el("dt", {}, "Op"), el("dd", {}, opTag(m.op)),
    el("dt", {}, m.op === "expire" ? "Expired at" : "Time"), el("dd", { class: "time-cell" }, m.time),
    m.expires_at ? [el("dt", {}, "Expires at"), el("dd", { class: "time-cell" }, m.expires_at)] : null,
    m.notes ? Object.keys(m.notes).sort().map((k) => [el("dt", { class: "notes" }, k), el("dd", { class: "notes" }, m.notes[k])]) : null);
  return el("div", { class: "entry" }, dl, m.op === "put" ? valueNode(m.value, m) : null,
    el("p", {}, el("a", { href: href("/entry", { ...keyQuery(m), rev: m.rev }) }, "This entry alone"), " · ",
      el("a", { href: href("/state", { rev: m.rev }) }, "Everything at this revision")));
}

function page(dir) {
  const t = timeline, w = t.data.window, span = Math.max(w.to_rev - w.from_rev, 1);
  if (dir < 0) { t.to = String(w.from_rev - 1); t.from = String(Math.max(w.from_rev - 1 - span, 0)); }
  else { t.from = String(w.to_rev + 1); t.to = String(w.to_rev + 1 + span); }
  drawKey(true);
}

function zoom(f) {
  const t = timeline, w = t.data.window;
  const mid = (w.from_rev + w.to_rev) / 2, half = Math.max(((w.to_rev - w.from_rev) / 2) * f, 1);
  t.from = String(Math.max(Math.floor(mid - half), 0));
  t.to = String(Math.ceil(mid + half));
  drawKey(true);
}

function zoomTo(from, to) { timeline.from = String(from); timeline.to = String(to); drawKey(true); }

document.addEventListener("keydown", (ev) => {
  if (body.dataset.view !== "key" || ev.target.closest("input, textarea") || !timeline.data) return;
  const click = (id) => { const b = document.getElementById(id); if (b && !b.disabled) b.click(); };
  if (ev.key === "ArrowLeft") click("older");
  if (ev.key === "ArrowRight") click("newer");
  if (ev.key === "+" || ev.key === "=") click("zoom-in");
  if (ev.key === "-") click("zoom-out");
});

// --- one entry, its value whole
async function viewEntry() {
  const q = params.get("key_b64") ? { key_b64: params.get("key_b64") } : { key: params.get("key") || "" };
  let m;
  try { m = await api("/api/entry", { ...q, rev: params.get("rev"), whole: 1 }); } catch (e) { show(el("h1", {}, "Entry"), errorBox(e)); return; }
  show(el("h1", {}, "Key ", keyLink(m, { from: Math.max(m.rev - 50, 0), to: m.rev + 50, rev: m.rev }), ` at revision ${m.rev}`),
    el("div", { class: "panel" }, entryPanel(m)),
    m.op === "put" ? el("p", {}, el("a", { href: href("/api/value", { ...keyQuery(m), rev: m.rev }) }, `Download the value (${fmtInt(m.value.size)} bytes)`)) : null);
}

// --- the state at a revision or a time
async function viewState() {
  const prefix = params.get("prefix") || "", after = params.get("after") || "";
  const at = params.get("at") || "";
  const head = (info || (await loadHead())).rev;
  const rev = at ? "" : params.get("rev") || String(head);
  const revInput = el("input", { type: "number", name: "rev", min: 0, max: head, value: rev || "", id: "rev-input", "aria-label": "Revision" });
  const slider = el("input", { type: "range", min: 0, max: head, value: rev || head, id: "rev-slider", "aria-label": "Revision slider" });
  const timeOut = el("span", { class: "muted time-cell", id: "rev-time" });
  let pending;
  slider.addEventListener("input", () => {
    revInput.value = slider.value;
    clearTimeout(pending);
    pending = setTimeout(async () => {
      try { const e = await api("/api/rev", { rev: slider.value }); timeOut.textContent = e.time ? `${e.time} UTC` : "before the first revision"; }
      catch (e) { timeOut.textContent = e.message; }
    }, 120);
  });
  revInput.addEventListener("input", () => { slider.value = revInput.value; });
  const byRev = el("form", { class: "bar", method: "get", action: "/state", id: "by-rev" },
    el("input", { type: "hidden", name: "prefix", value: prefix }),
    el("label", {}, "Revision", slider), el("label", {}, " ", revInput), el("button", { type: "submit" }, "Show at revision"), timeOut);
  const byTime = el("form", { class: "bar", method: "get", action: "/state", id: "by-time" },
    el("input", { type: "hidden", name: "prefix", value: prefix }),
    el("label", {}, "Time (RFC 3339, to the nanosecond)", el("input", { name: "at", class: "time", value: at, id: "time-input",
      placeholder: "2024-03-01T12:00:00.000000001Z", autocomplete: "off" })),
    el("button", { type: "submit" }, "Show as of this time"));
  const prefixForm = el("form", { class: "bar", method: "get", action: "/state" },
    el("label", {}, "Prefix", el("input", { name: "prefix", value: prefix, autocomplete: "off" })),
    rev ? el("input", { type: "hidden", name: "rev", value: rev }) : el("input", { type: "hidden", name: "at", value: at }),
    el("button", { type: "submit" }, "Filter"));
  const top = [el("h1", {}, "State"), byRev, byTime, prefixForm];
  show(...top, el("p", { class: "muted" }, "Loading…"));
  let r;
  try { r = await api("/api/state", { prefix, after, rev, at }); } catch (e) { show(...top, errorBox(e)); return; }
  if (r.time) timeOut.textContent = `${r.time} UTC`;
  slider.value = r.rev; revInput.value = r.rev;
  if (!at && r.time) byTime.querySelector("input[name=at]").placeholder = r.time;
  const rows = r.keys.map((e) => el("tr", {},
    el("td", { class: "key" }, keyLink(e, { rev: e.rev, from: Math.max(e.rev - 50, 0), to: e.rev + 50 })),
    el("td", {}, valueNode(e.value, e)),
    el("td", { class: "num" }, fmtInt(e.rev)),
    timeCell(e.time),
    el("td", { class: "time-cell hide-narrow" }, e.expires_at || "")));
  show(...top,
    el("div", { class: "summary", id: "state-summary" },
      el("span", {}, el("b", { id: "state-live" }, fmtInt(r.live_keys)), ` live keys under “${prefix}”`),
      el("span", {}, "at revision ", el("b", { id: "state-rev" }, String(r.rev))),
      r.time ? el("span", { class: "time-cell" }, `made at ${r.time}`) : null,
      r.at ? el("span", { class: "time-cell" }, `as of ${r.at}`) : null),
    el("div", { class: "tablewrap" }, el("table", { id: "state" },
      el("thead", {}, el("tr", {}, el("th", {}, "Key"), el("th", {}, "Value"), el("th", { class: "num" }, "Rev"), el("th", {}, "Written (UTC)"), el("th", { class: "hide-narrow" }, "Expires"))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No live keys then."))))),
    el("div", { class: "pager" }, r.next_after ? el("a", { href: href("/state", { prefix, rev, at, after: r.next_after }), rel: "next" }, "Next page") : null));
}

// --- the diff between two revisions
async function viewDiff() {
  const head = (info || (await loadHead())).rev;
  const prefix = params.get("prefix") || "", after = params.get("after") || "";
  const from = params.get("from") || String(Math.max(head - 10, 0)), to = params.get("to") || String(head);
  const form = el("form", { class: "bar", method: "get", action: "/diff" },
    el("label", {}, "Prefix", el("input", { name: "prefix", value: prefix, autocomplete: "off" })),
    el("label", {}, "From revision", el("input", { type: "number", name: "from", min: 0, max: head, value: from, id: "diff-from" })),
    el("label", {}, "To revision", el("input", { type: "number", name: "to", min: 0, max: head, value: to, id: "diff-to" })),
    el("button", { type: "submit" }, "Compare"));
  show(el("h1", {}, "Diff"), form, el("p", { class: "muted" }, "Loading…"));
  let r;
  try { r = await api("/api/diff", { prefix, from, to, after }); } catch (e) { show(el("h1", {}, "Diff"), form, errorBox(e)); return; }
  const c = r.counts;
  const side = (e, spans, cls) => {
    if (!e) return el("span", { class: "muted" }, "absent");
    if (spans) spans.cls = cls;
    return el("div", {}, el("div", { class: "muted time-cell" }, `rev ${e.rev} · ${e.time}${e.expires_at ? " · expires " + e.expires_at : ""}`),
      valueNode(e.value, e, spans), notesNode(e.notes));
  };
  const rows = r.changes.map((d) => el("tr", { "data-kind": d.kind },
    el("td", { class: "key" }, keyLink(d, { from: Math.max(r.from, 0), to: r.to })),
    el("td", {}, el("span", { class: `tag kind-${d.kind}` }, d.kind),
      d.end ? el("div", { class: "muted time-cell" }, `${d.end.op === "expire" ? "expired" : "deleted"} at rev ${d.end.rev} · ${d.end.time}`) : null),
    el("td", {}, side(d.before, d.before_diff, "d-del")),
    el("td", {}, side(d.after, d.after_diff, "d-add"))));
  show(el("h1", {}, "Diff"), form,
    el("div", { class: "summary", id: "diff-summary" },
      el("span", {}, `From revision ${r.from} to ${r.to} under “${prefix}”:`),
      ["added", "changed", "deleted", "expired"].map((k) => el("span", { class: `kind-${k}` }, el("b", { id: `count-${k}` }, fmtInt(c[k])), ` ${k}`))),
    el("div", { class: "tablewrap" }, el("table", { id: "diff" },
      el("thead", {}, el("tr", {}, el("th", {}, "Key"), el("th", {}, "Change"), el("th", {}, `At ${r.from}`), el("th", {}, `At ${r.to}`))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 4, class: "muted" }, "Nothing changed."))))),
    el("div", { class: "pager" }, r.next_after ? el("a", { href: href("/diff", { prefix, from, to, after: r.next_after }), rel: "next" }, "Next page") : null));
}

// --- verify
async function viewVerify() {
  const rev = params.get("rev") || "", digest = params.get("digest") || "";
  const cur = el("div", { class: "panel", id: "current" }, el("span", { class: "muted" }, "Loading…"));
  const form = el("form", { class: "bar", method: "get", action: "/verify", id: "verify-form" },
    el("label", {}, "Revision", el("input", { type: "number", name: "rev", min: 0, value: rev, required: true, id: "verify-rev" })),
    el("label", { class: "grow" }, "Digest taken then (64 hex digits)", el("input", { name: "digest", class: "digest", value: digest, required: true,
      id: "verify-digest", autocomplete: "off", spellcheck: "false" })),
    el("button", { type: "submit" }, "Check"));
  const answer = el("div", { id: "answer", "aria-live": "polite" });
  const prog = el("progress", { id: "verify-progress", max: 1, value: 0, hidden: true });
  const whole = el("div", { id: "whole-result", "aria-live": "polite" });
  const run = el("button", { id: "verify-all", on: { click: () => verifyAll(run, prog, whole) } }, "Verify the whole history");
  show(el("h1", {}, "Verify"),
    el("h2", {}, "The digest now"), cur,
    el("h2", {}, "Does this history lead to a digest taken earlier?"), form, answer,
    el("h2", {}, "Re-hash every revision kept"),
    el("p", { class: "muted" }, "Recomputes the hash chain from every revision this page can show, from the floor to the latest, and checks each link."),
    run, prog, whole);
  try {
    const d = await api("/api/digest");
    if (!d.chain) cur.replaceChildren(el("span", {}, d.sentence));
    else {
      const code = el("code", { class: "digest", id: "digest" }, d.digest);
      const copy = el("button", { on: { click: async () => {
        try { await navigator.clipboard.writeText(`${d.rev} ${d.digest}`); copy.textContent = "Copied"; }
        catch (e) { const s = getSelection(); s.selectAllChildren(code); copy.textContent = "Selected: copy it"; }
      } } }, "Copy");
      cur.replaceChildren(el("dl", {}, el("dt", {}, "Revision"), el("dd", { id: "digest-rev" }, String(d.rev)), el("dt", {}, "Digest"), el("dd", {}, code)), copy);
      if (!rev) form.querySelector("#verify-rev").placeholder = String(d.rev);
    }
  } catch (e) { cur.replaceChildren(errorBox(e)); }
  if (rev && digest) {
    try {
      const v = await api("/api/verify", { rev, digest });
      answer.replaceChildren(el("p", { class: `sentence ${v.ok ? "ok" : "bad"}`, id: "sentence", "data-ok": String(v.ok) }, v.sentence));
    } catch (e) {
      answer.replaceChildren(el("p", { class: "sentence bad", id: "sentence", "data-ok": "false" }, e.message));
    }
  }
}

function verifyAll(btn, prog, out) {
  btn.disabled = true; prog.hidden = false; prog.value = 0; out.replaceChildren();
  const es = new EventSource("/api/verify/all");
  const end = (node) => { es.close(); btn.disabled = false; out.replaceChildren(node); };
  es.addEventListener("progress", (ev) => { const p = JSON.parse(ev.data); prog.max = Math.max(p.total, 1); prog.value = p.done; });
  es.addEventListener("result", (ev) => {
    const r = JSON.parse(ev.data); prog.value = prog.max;
    end(el("p", { class: `sentence ${r.ok ? "ok" : "bad"}`, id: "whole-sentence", "data-ok": String(r.ok) }, r.sentence));
  });
  es.addEventListener("failure", (ev) => end(el("p", { class: "sentence bad", id: "whole-sentence", "data-ok": "false" }, JSON.parse(ev.data).error)));
  es.onerror = () => { if (es.readyState !== EventSource.OPEN) end(el("p", { class: "sentence bad", id: "whole-sentence" }, "The verification stopped: the connection was lost.")); };
}

// --- live: follow new revisions
// follow redraws the view with what new revisions changed, at most every
// half second however fast they come.
function follow() {
  const es = new EventSource("/api/events");
  let pending = null, seen = { rev: 0, keys: [], more: false };
  es.addEventListener("revision", (ev) => {
    const r = JSON.parse(ev.data);
    document.getElementById("head").textContent = `revision ${fmtInt(r.rev)} · live`;
    if (info) info.rev = r.rev;
    seen = { rev: r.rev, keys: seen.keys.concat(r.keys).slice(-1000), more: seen.more || r.more };
    if (pending) return;
    pending = setTimeout(() => { pending = null; const s = seen; seen = { rev: 0, keys: [], more: false }; refresh(s); }, 500);
  });
}

function refresh(r) {
  const v = body.dataset.view;
  if (v === "key" && timeline.data && !timeline.to && (r.more || r.keys.includes(timeline.key))) drawKey();
  else if (v === "keys" && !params.get("after")) viewKeys();
  else if (v === "verify" && !params.get("rev")) loadHead().then(() => api("/api/digest")).then((d) => {
    const code = document.getElementById("digest"), dr = document.getElementById("digest-rev");
    if (code && d.chain) { code.textContent = d.digest; dr.textContent = String(d.rev); }
  }).catch(() => {});
}

const views = { keys: viewKeys, key: viewKey, state: viewState, diff: viewDiff, verify: viewVerify, entry: viewEntry };
for (const a of document.querySelectorAll("nav a")) if (a.dataset.nav === body.dataset.view) a.setAttribute("aria-current", "page");
window.addEventListener("popstate", () => { location.reload(); });
loadHead().then(() => (views[body.dataset.view] || viewKeys)()).then(() => { body.dataset.ready = "1"; });
if (live) follow();
