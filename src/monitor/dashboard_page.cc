#include "monitor/dashboard_page.h"

namespace lsb::monitor {
namespace {

// Plain HTML+JS. Live events are read with fetch() streaming rather than EventSource, so the page
// can send the bearer token in a header (never in a URL, where logs would keep it).
// Behind the cluster's front (deploy/swarm, docs/scale-out.md) the page also lists every node
// (GET /cluster/nodes, answered by the front) with each node's overview read through the front's
// per-node paths (/nodes/<node>/v1/overview); picking a node (#node=NAME) pins every view of the
// page to that node. Served by a lone daemon, /cluster/nodes is not there and the list stays hidden.
constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>LLM Sandbox</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
  header { background: #1d2330; color: #fff; padding: 10px 18px; display: flex; gap: 18px; align-items: center; }
  header h1 { font-size: 17px; margin: 0; }
  #conn { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #8a5; }
  #conn.down { background: #c44; }
  .stat { font-size: 12px; opacity: .85; }
  main { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; padding: 14px; }
  section { background: #fff; border-radius: 6px; padding: 10px 12px; box-shadow: 0 1px 2px #0002; min-width: 0; }
  section h2 { font-size: 14px; margin: 0 0 8px; }
  .wide { grid-column: 1 / 3; }
  table { width: 100%; border-collapse: collapse; font-size: 12px; }
  td, th { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eee; white-space: nowrap; }
  tr.exec { cursor: pointer; } tr.exec:hover { background: #eef3ff; }
  .st-ok { color: #2a7; } .st-error, .st-sandbox_error { color: #c60; } .st-timeout, .st-oom, .st-killed, .st-denied, .st-output_limit { color: #c22; }
  #alerts { list-style: none; margin: 0; padding: 0; max-height: 320px; overflow: auto; font-size: 12px; }
  #alerts li { padding: 4px 6px; border-left: 4px solid #ca0; margin-bottom: 3px; background: #fffbe8; }
  #alerts li.critical { border-color: #c22; background: #fdecec; }
  #alerts li.info { border-color: #58c; background: #eef4fb; }
  #alerts li.fresh { animation: flash 1.5s; }
  @keyframes flash { from { background: #ffe28a; } }
  pre { background: #f7f7f9; padding: 6px; max-height: 220px; overflow: auto; font-size: 12px; white-space: pre-wrap; word-break: break-all; }
  .bar { display: inline-block; height: 8px; background: #58c; vertical-align: middle; }
  #token-box { display: none; padding: 10px 18px; background: #fff3cd; }
  .muted { color: #888; }
  #totals-grid { display: grid; grid-template-columns: repeat(6, 1fr); gap: 8px; }
  .card { background: #f7f8fb; border-radius: 4px; padding: 6px 8px; font-size: 12px; min-width: 0; }
  .card b { display: block; font-size: 15px; }
  #filters { display: flex; gap: 14px; align-items: center; font-size: 12px; }
  .scroll { max-height: 420px; overflow: auto; }
</style>
</head>
<body>
<header>
  <h1>LLM Sandbox</h1>
  <span id="conn" class="@CONN_CLASS@">@CONN_TEXT@</span>
  <span class="stat">running <b id="n-running">0</b></span>
  <span class="stat">recent <b id="n-recent">0</b></span>
  <span class="stat">alerts <b id="n-alerts">0</b></span>
  <span class="stat">you <b id="n-owner">-</b></span>
  <span class="stat">node <b id="n-node">-</b></span>
</header>
<div id="token-box">This daemon wants a bearer token:
  <input id="token" type="password" size="40"> <button id="token-save">use</button></div>
<main>
  <section id="nodes-section" class="wide" style="display: none"><h2>Nodes</h2>
    <table><thead><tr><th>node</th><th>state</th><th>backend</th><th>daemon started</th><th>workers busy</th><th>queue</th><th>sessions</th><th>running</th><th>warm pool</th><th>host CPU</th></tr></thead>
    <tbody id="nodes"></tbody></table><p id="nodes-note" class="muted"></p></section>
  <section id="totals" class="wide"><h2>Daemon and host</h2><div id="totals-grid">
    <div class="card">daemon CPU<b id="t-daemon-cpu">-</b><span id="t-daemon-mem" class="muted">-</span></div>
    <div class="card">host CPU<b id="t-host-cpu">-</b><span id="t-host-load" class="muted">-</span></div>
    <div class="card">host memory<b id="t-host-mem">-</b><span id="t-host-mem-total" class="muted">-</span></div>
    <div class="card">workers busy<b id="t-workers">-</b><span id="t-queue" class="muted">-</span></div>
    <div class="card">warm pool<b id="t-pool">-</b><span id="t-pool-policies" class="muted">-</span></div>
    <div class="card">sessions<b id="t-sessions">-</b><span id="t-sessions-mine" class="muted">-</span></div>
  </div></section>
  <section id="running-section"><h2>Running sandboxes</h2>
    <table><thead><tr><th>execution</th><th>policy</th><th>kind</th><th>started</th><th>CPU</th><th>of limit</th><th>memory</th></tr></thead>
    <tbody id="running"></tbody></table></section>
  <section id="alerts-section"><h2>Alerts (live)</h2><ul id="alerts"></ul></section>
  <section id="sessions-section" class="wide"><h2>Sessions</h2>
    <table><thead><tr><th>session</th><th>policy</th><th>owner</th><th>language</th><th>age</th><th>idle</th><th>executions</th><th>state</th></tr></thead>
    <tbody id="sessions"></tbody></table></section>
  <section class="wide"><div id="filters"><b>Filter</b>
    <label>policy <select id="f-policy"><option value="">any</option></select></label>
    <label>status <select id="f-status"><option value="">any</option></select></label>
    <label>alert rule <select id="f-rule"><option value="">any</option></select></label>
    <span id="f-note" class="muted"></span></div></section>
  <section id="recent-section" class="wide"><h2>Recent executions</h2>
    <div class="scroll"><table><thead><tr><th>execution</th><th>policy</th><th>status</th><th>exit</th><th>wall</th><th>cpu</th><th>CPU of limit</th><th>peak memory</th><th>alerts</th><th>finished</th></tr></thead>
    <tbody id="recent"></tbody></table></div></section>
  <section id="history-section" class="wide"><h2>History (audit log, newest first)</h2>
    <div class="scroll"><table><thead><tr><th>execution</th><th>policy</th><th>status</th><th>exit</th><th>wall</th><th>cpu</th><th>CPU of limit</th><th>peak memory</th><th>alerts</th><th>finished</th></tr></thead>
    <tbody id="history"></tbody></table></div>
    <p><button id="history-reload">newest</button> <button id="history-more" disabled>older</button> <span id="history-status" class="muted">loading</span></p></section>
  <section id="detail" class="wide"><h2>Execution detail</h2><div id="detail-body" class="muted">click an execution</div></section>
</main>
<script>
"use strict";
const state = { running: new Map(), recent: [], alerts: 0, token: sessionStorage.getItem("lsb-token") || "",
  owner: "", prefix: "", nodes: [], history: [], historyCursor: null, historyLoading: false, historyGen: 0, filter: { policy: "", status: "", rule: "" } };
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c]));
const num = (v) => (typeof v === "number" && isFinite(v)) ? v : null;
const mib = (b) => num(b) == null ? "-" : (b / 1048576).toFixed(1) + " MiB";
const gib = (b) => num(b) == null ? "-" : (b / 1073741824).toFixed(1) + " GiB";
const ms = (v) => num(v) == null ? "-" : v + " ms";
const pct = (v) => num(v) == null ? "-" : v.toFixed(0) + "%";
const time = (t) => t ? esc(new Date(t).toLocaleTimeString()) : "";
const age = (t) => { const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000)); return isFinite(s) ? (s < 120 ? s + " s" : s < 7200 ? Math.round(s / 60) + " min" : Math.round(s / 3600) + " h") : "-"; };

// The badge: "up" once the daemon answered (or served the page with its state), "live" on the
// event stream, "down" classes when it is not reachable or wants a token.
function setConn(text, cls) { $("conn").textContent = text; $("conn").className = cls; }
function headers() { return state.token ? { Authorization: "Bearer " + state.token } : {}; }
// This page's API paths go to the pinned node, if any (the front's /nodes/<node> prefix).
function api(path) { return getJson(state.prefix + path); }
async function getJson(path) {
  const r = await fetch(path, { headers: headers() });
  if (r.status === 401) { $("token-box").style.display = "block"; setConn("token needed", "down"); throw new Error("unauthorized"); }
  if (!r.ok) { let m = "HTTP " + r.status; try { m = (await r.json()).error.message; } catch (e) {} const err = new Error(m); err.status = r.status; throw err; }
  return r.json();
}

// The filters: client-side over the rows loaded, and the same values as query parameters for
// /v1/history (the daemon checks them). A running execution has no status yet: only policy applies.
function matches(e, running) {
  const f = state.filter;
  if (f.policy && e.policy !== f.policy) return false;
  if (running) return !f.status && !f.rule;
  if (f.status && e.status !== f.status) return false;
  if (f.rule && !(e.alerts || []).some((a) => a.rule === f.rule)) return false;
  return true;
}
function filterQuery() {
  const f = state.filter, q = [];
  for (const k of ["policy", "status", "rule"]) if (f[k]) q.push(k + "=" + encodeURIComponent(f[k]));
  return q.join("&");
}

function cpuOfLimit(e) {
  const v = num(e.cpu_percent_of_limit);
  return v == null ? "-" : v.toFixed(0) + "% of " + esc(num(e.cpu_limit) == null ? "?" : e.cpu_limit) + " CPU";
}

function renderRunning() {
  const rows = [...state.running.values()].filter((e) => matches(e, true)).map((e) =>
    `<tr class="exec" data-id="${esc(e.execution_id)}"><td>${esc(e.execution_id)}</td><td>${esc(e.policy)}</td><td>${esc(e.kind)}</td>` +
    `<td>${time(e.started_at)}</td><td>${num(e.cpu_percent) == null ? "-" : pct(e.cpu_percent) + " <span class=bar style='width:" + Math.min(60, e.cpu_percent / 2).toFixed(0) + "px'></span>"}</td>` +
    `<td>${cpuOfLimit(e)}</td><td>${mib(e.memory_bytes)}</td></tr>`);
  $("running").innerHTML = rows.join("") || `<tr><td colspan=7 class=muted>none</td></tr>`;
  $("n-running").textContent = state.running.size;
}

function execRow(e) {
  return `<tr class="exec" data-id="${esc(e.execution_id)}"><td>${esc(e.execution_id)}</td><td>${esc(e.policy)}</td>` +
    `<td class="st-${esc(e.status)}">${esc(e.status)}</td><td>${esc(e.exit_code)}</td><td>${ms(e.duration_ms)}</td><td>${ms(e.cpu_ms)}</td>` +
    `<td>${cpuOfLimit(e)}</td><td>${mib(e.memory_peak_bytes)}</td><td>${(e.alerts || []).map((a) => esc(a.rule)).join(", ")}</td><td>${time(e.time)}</td></tr>`;
}

function renderRecent() {
  const rows = state.recent.filter((e) => matches(e, false));
  $("recent").innerHTML = rows.map(execRow).join("") || `<tr><td colspan=10 class=muted>none</td></tr>`;
  $("n-recent").textContent = state.recent.length;
}

function renderHistory() {
  $("history").innerHTML = state.history.filter((e) => matches(e, false)).map(execRow).join("");
}

async function loadHistory(reset) {
  if (state.historyLoading && !reset) return;
  const gen = reset ? ++state.historyGen : state.historyGen;
  if (reset) { state.history = []; state.historyCursor = null; renderHistory(); }
  state.historyLoading = true;
  $("history-more").disabled = true;
  $("history-status").textContent = "loading";
  try {
    let q = "limit=50";
    const fq = filterQuery();
    if (fq) q += "&" + fq;
    if (state.historyCursor) q += "&cursor=" + encodeURIComponent(state.historyCursor);
    const d = await api("/v1/history?" + q);
    if (gen !== state.historyGen) return;  // the filter changed meanwhile
    state.history = state.history.concat(d.executions);
    state.historyCursor = d.next_cursor;
    renderHistory();
    $("history-status").textContent = state.history.length + " loaded" + (d.next_cursor ? "" : ", the oldest reached") +
      (d.cursor_expired ? " (the log rotated past this point)" : "");
    $("history-more").disabled = !d.next_cursor;
  } catch (err) {
    if (gen === state.historyGen) $("history-status").textContent = String(err.message || err);
  } finally {
    if (gen === state.historyGen) state.historyLoading = false;
  }
}

function renderTotals(o) {
  const d = o.daemon || {}, h = o.host || {}, x = o.executor || {}, s = o.sessions || {};
  $("n-node").textContent = o.node || "-";
  $("t-daemon-cpu").textContent = pct(d.cpu_percent);
  $("t-daemon-mem").textContent = mib(d.rss_bytes) + " RSS, " + (num(d.threads) == null ? "-" : d.threads) + " threads";
  $("t-host-cpu").textContent = pct(h.cpu_percent);
  $("t-host-load").textContent = (num(h.cpus) == null ? "-" : h.cpus) + " CPUs, load " + (num(h.load1) == null ? "-" : h.load1.toFixed(2));
  const used = num(h.memory_total_bytes) != null && num(h.memory_available_bytes) != null ? h.memory_total_bytes - h.memory_available_bytes : null;
  $("t-host-mem").textContent = gib(used) + " used";
  $("t-host-mem-total").textContent = "of " + gib(h.memory_total_bytes);
  $("t-workers").textContent = x.busy + " / " + x.workers;
  $("t-queue").textContent = "queue " + x.queued + " / " + x.queue_limit;
  if (o.pool) {
    $("t-pool").textContent = o.pool.warm_boxes + " warm";
    const per = Object.entries(o.pool.by_policy || {}).map(([p, n]) => p + " " + n + "/" + o.pool.per_policy).join(", ");
    $("t-pool-policies").textContent = per || "no policy pooled yet";
  } else {
    $("t-pool").textContent = "-";
    $("t-pool-policies").textContent = "no native pool on " + (o.backend || "this backend");
  }
  $("t-sessions").textContent = s.active + " / " + s.limit;
  $("t-sessions-mine").textContent = s.mine + " yours";
  state.owner = o.owner || "";
  $("n-owner").textContent = state.owner || "single user";
}

// The cluster's nodes, when a front serves this page. Paths are built here from names of the
// node-name shape (never taken from the answer), so the token only goes to this origin's paths.
const NODE_NAME = /^[A-Za-z0-9_-]{1,63}$/;
async function findNodes() {
  try {
    const r = await fetch("/cluster/nodes", { headers: headers() });
    if (!r.ok) return;
    const d = await r.json();
    state.nodes = (Array.isArray(d.nodes) ? d.nodes : []).map((n) => n && n.name).filter((n) => typeof n === "string" && NODE_NAME.test(n));
  } catch (err) { return; }
  if (!state.nodes.length) return;
  const m = /^#node=([A-Za-z0-9_-]{1,63})$/.exec(location.hash);
  if (m && state.nodes.includes(m[1])) state.prefix = "/nodes/" + m[1];
  $("nodes-section").style.display = "block";
  $("nodes-note").innerHTML = state.prefix
    ? "The views below are of node <b>" + esc(m[1]) + "</b> only. <a href=\"#\">all nodes</a>"
    : "The views below are of whichever node the front picks for each request; pick a node to see only its own.";
}
async function refreshNodes() {
  const rows = await Promise.all(state.nodes.map(async (n) => {
    try { return { n, o: await getJson("/nodes/" + n + "/v1/overview") }; } catch (err) { return { n, err: String(err.message || err) }; }
  }));
  $("nodes").innerHTML = rows.map(({ n, o, err }) => {
    const pinned = state.prefix === "/nodes/" + n;
    const name = `<a href="#node=${esc(n)}">${pinned ? "<b>" + esc(n) + "</b>" : esc(n)}</a>`;
    if (!o) return `<tr class="node" data-node="${esc(n)}"><td>${name}</td><td class="st-error">down</td><td colspan=8 class=muted>${esc(err)}</td></tr>`;
    const x = o.executor || {}, s = o.sessions || {}, h = o.host || {};
    return `<tr class="node" data-node="${esc(n)}"><td>${name}</td><td class="st-ok">${o.node === n ? "serving" : "answered as " + esc(o.node)}</td>` +
      `<td>${esc(o.backend)}</td><td>${time((o.daemon || {}).started_at)}</td><td>${esc(x.busy)} / ${esc(x.workers)}</td><td>${esc(x.queued)} / ${esc(x.queue_limit)}</td>` +
      `<td>${esc(s.active)} / ${esc(s.limit)}</td><td>${esc((o.executions || {}).running)}</td><td>${o.pool ? esc(o.pool.warm_boxes) + " warm" : "-"}</td><td>${pct(h.cpu_percent)}</td></tr>`;
  }).join("");
}

function fillFilters(f) {
  for (const [id, values] of [["f-policy", f.policies], ["f-status", f.statuses], ["f-rule", f.rules]]) {
    const sel = $(id);
    if (sel.options.length > 1) continue;
    sel.innerHTML = `<option value="">any</option>` + (values || []).map((v) => `<option value="${esc(v)}">${esc(v)}</option>`).join("");
  }
}

async function refreshTotals() {
  try {
    const o = await api("/v1/overview");
    renderTotals(o);
    fillFilters(o.filters || {});
    return o;
  } catch (err) { return null; }
}

async function refreshSessions() {
  try { renderSessions(await api("/v1/sessions")); } catch (err) { /* shown by the next refresh */ }
}

function renderSessions(d) {
  const owner = state.owner || "single user";
  $("sessions").innerHTML = d.sessions.map((s) =>
    `<tr data-id="${esc(s.session_id)}"><td>${esc(s.session_id)}</td><td>${esc(s.policy)}</td><td>${esc(owner)}</td><td>${esc(s.language)}</td>` +
    `<td>${esc(age(s.created_at))}</td><td>${esc(age(s.last_used_at))}</td><td class="executions">${esc(s.executions)}</td><td>${esc(s.state)}</td></tr>`).join("") ||
    `<tr><td colspan=8 class=muted>none</td></tr>`;
}

function addAlert(a, fresh) {
  const li = document.createElement("li");
  li.className = "alert " + (["info", "warning", "critical"].includes(a.severity) ? a.severity : "warning") + (fresh ? " fresh" : "");
  li.dataset.rule = a.rule;
  li.dataset.execution = a.execution_id || "";
  li.innerHTML = `<b>${esc(a.rule)}</b> <span class=muted>${esc(a.severity)}</span> ${esc(a.message)}` +
    (a.address ? ` <code>${esc(a.address)}</code>` : "") + (a.path ? ` <code>${esc(a.path)}</code>` : "") +
    ` <span class=muted>${esc(a.execution_id || "")} ${esc(a.policy || "")}</span>`;
  $("alerts").prepend(li);
  while ($("alerts").children.length > 200) $("alerts").lastChild.remove();
  state.alerts += 1;
  $("n-alerts").textContent = state.alerts;
}

async function showDetail(id) {
  let e;
  try { e = await api("/v1/executions/" + encodeURIComponent(id)); } catch (err) {
    // Older than the recent view: what the audit log keeps (sizes and hashes, not the output).
    e = state.history.find((h) => h.execution_id === id);
    if (!e || err.status !== 404) { $("detail-body").textContent = String(err.message || err); return; }
    e = Object.assign({ from_history: true }, e);
  }
  const alerts = (e.alerts || []).map((a) => `<li>${esc(a.severity)} <b>${esc(a.rule)}</b>: ${esc(a.message)}${a.path ? " <code>" + esc(a.path) + "</code>" : ""}</li>`).join("");
  const trace = (e.trace || []).slice(0, 500).map((t) => `${t.time_ms}ms ${t.kind} ${t.path || t.address || ""} ${t.decision || ""}`).join("\n");
  $("detail-body").innerHTML =
    `<p><b id="detail-id">${esc(e.execution_id)}</b> policy <b>${esc(e.policy)}</b> ${esc(e.kind)} ${esc(e.language || "")} — ` +
    `<span class="st-${esc(e.status)}">${esc(e.status || e.state)}</span> exit ${esc(e.exit_code)}, wall ${ms(e.duration_ms)}, cpu ${ms(e.cpu_ms)} (${cpuOfLimit(e)}), ` +
    `peak ${mib(e.memory_peak_bytes)}, code ${esc(e.code_bytes)} bytes sha256 <code>${esc((e.code_sha256 || "").slice(0, 16))}…</code></p>` +
    (e.error ? `<p class="st-error">${esc(e.error)}</p>` : "") +
    (e.from_history ? `<p id="detail-history" class="muted">from the audit log: its output is not kept there</p>` :
      `<h3>stdout</h3><pre id="detail-stdout">${esc(e.stdout)}</pre><h3>stderr</h3><pre>${esc(e.stderr)}</pre>`) +
    `<h3>alerts</h3><ul>${alerts || "<li class=muted>none</li>"}</ul>` +
    (trace ? `<h3>trace</h3><pre>${esc(trace)}</pre>` : "");
}

async function refresh() {
  try {
    const d = await api("/v1/executions?limit=50");
    state.running = new Map(d.running.map((e) => [e.execution_id, Object.assign(state.running.get(e.execution_id) || {}, e)]));
    state.recent = d.recent;
    renderRunning();
    renderRecent();
    return d;
  } catch (err) { return null; }
}

function onEvent(type, data) {
  if (type === "alert") addAlert(data, true);
  else if (type === "execution_started") { state.running.set(data.execution_id, data); renderRunning(); }
  else if (type === "usage") {
    const e = state.running.get(data.execution_id);
    if (e) { Object.assign(e, data); renderRunning(); }
  } else if (type === "execution_finished") {
    state.running.delete(data.execution_id);
    state.recent.unshift(data);
    state.recent = state.recent.slice(0, 50);
    renderRunning();
    renderRecent();
  } else if (type === "session_created" || type === "session_closed") refreshSessions();
}

async function follow() {
  for (;;) {
    try {
      const r = await fetch(state.prefix + "/v1/events", { headers: headers() });
      if (r.status === 401) { $("token-box").style.display = "block"; }
      if (!r.ok) throw new Error("HTTP " + r.status);
      $("conn").textContent = "live"; $("conn").className = "live";
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let type = "message", data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) type = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (data) { try { onEvent(type, JSON.parse(data)); } catch (err) { console.error(err); } }
        }
      }
    } catch (err) { console.warn("events:", err); }
    $("conn").textContent = "reconnecting"; $("conn").className = "down";
    await new Promise((res) => setTimeout(res, 2000));
    refresh();
  }
}

document.addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr.exec");
  if (tr) showDetail(tr.dataset.id);
});
for (const k of ["policy", "status", "rule"]) {
  $("f-" + k).addEventListener("change", (ev) => {
    state.filter[k] = ev.target.value;
    $("f-note").textContent = state.filter.status || state.filter.rule ? "running executions have no status yet: hidden" : "";
    renderRunning();
    renderRecent();
    loadHistory(true);
  });
}
$("history-more").onclick = () => loadHistory(false);
$("history-reload").onclick = () => loadHistory(true);
$("token-save").onclick = () => { state.token = $("token").value; sessionStorage.setItem("lsb-token", state.token); location.reload(); };

window.addEventListener("hashchange", () => location.reload());

// The daemon's state when it served this page (no token needed, so none is set; null otherwise):
// drawn before the first paint, so a page never shows empty counters while its first polls run.
const FIRST = @FIRST@;
if (FIRST && !location.hash.includes("node=")) {
  renderTotals(FIRST.overview);
  fillFilters(FIRST.overview.filters || {});
  state.running = new Map(FIRST.executions.running.map((e) => [e.execution_id, e]));
  state.recent = FIRST.executions.recent;
  renderRunning();
  renderRecent();
  renderSessions(FIRST.sessions);
}

(async () => {
  await findNodes();
  if (state.nodes.length) { refreshNodes(); setInterval(refreshNodes, 3000); }
  const o = await refreshTotals();
  if (o && $("conn").className !== "live") setConn("up", "up");
  refreshSessions();
  const d = await refresh();
  if (d) for (const e of d.recent.slice().reverse()) for (const a of e.alerts || []) addAlert(Object.assign({ execution_id: e.execution_id, policy: e.policy }, a), false);
  if (o && !o.audit_log) $("history-status").textContent = "this daemon keeps no audit log (serve --audit-log FILE): only the recent executions above";
  else loadHistory(true);
  follow();
  setInterval(refresh, 10000);
  setInterval(refreshTotals, 2000);
  setInterval(refreshSessions, 5000);
})();
</script>
</body>
</html>
)HTML";

void ReplaceOnce(std::string& page, std::string_view marker, std::string_view with) {
  page.replace(page.find(marker), marker.size(), with);
}

}  // namespace

std::string DashboardPage(const std::optional<nlohmann::json>& first) {
  std::string page(kPage);
  ReplaceOnce(page, "@CONN_CLASS@", first ? "up" : "down");
  // With a snapshot the daemon is known up; without one (tokens) the page asks once it has one.
  ReplaceOnce(page, "@CONN_TEXT@", first ? "up" : "loading");
  std::string data = first ? first->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : "null";
  // Inside <script>: a "</script>" or "<!--" in a value (a policy name, output) must not end it.
  std::string safe;
  safe.reserve(data.size());
  for (char c : data) safe += c == '<' ? std::string("\\u003c") : std::string(1, c);
  ReplaceOnce(page, "@FIRST@", safe);
  return page;
}

}  // namespace lsb::monitor
