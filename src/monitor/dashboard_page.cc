#include "monitor/dashboard_page.h"

namespace lsb::monitor {
namespace {

// Plain HTML+JS. Live events are read with fetch() streaming rather than EventSource, so the page
// can send the bearer token in a header (never in a URL, where logs would keep it).
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
  #detail { grid-column: 1 / 3; }
  .bar { display: inline-block; height: 8px; background: #58c; vertical-align: middle; }
  #token-box { display: none; padding: 10px 18px; background: #fff3cd; }
  .muted { color: #888; }
</style>
</head>
<body>
<header>
  <h1>LLM Sandbox</h1>
  <span id="conn" class="down">connecting</span>
  <span class="stat">running <b id="n-running">0</b></span>
  <span class="stat">recent <b id="n-recent">0</b></span>
  <span class="stat">alerts <b id="n-alerts">0</b></span>
</header>
<div id="token-box">This daemon wants a bearer token:
  <input id="token" type="password" size="40"> <button id="token-save">use</button></div>
<main>
  <section id="running-section"><h2>Running sandboxes</h2>
    <table><thead><tr><th>execution</th><th>policy</th><th>kind</th><th>started</th><th>CPU</th><th>memory</th></tr></thead>
    <tbody id="running"></tbody></table></section>
  <section id="alerts-section"><h2>Alerts (live)</h2><ul id="alerts"></ul></section>
  <section id="recent-section" style="grid-column: 1 / 3"><h2>Recent executions</h2>
    <table><thead><tr><th>execution</th><th>policy</th><th>status</th><th>exit</th><th>wall</th><th>cpu</th><th>peak memory</th><th>alerts</th><th>finished</th></tr></thead>
    <tbody id="recent"></tbody></table></section>
  <section id="detail"><h2>Execution detail</h2><div id="detail-body" class="muted">click an execution</div></section>
</main>
<script>
"use strict";
const state = { running: new Map(), recent: [], alerts: 0, token: sessionStorage.getItem("lsb-token") || "" };
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c]));
const mib = (b) => b == null ? "-" : (b / 1048576).toFixed(1) + " MiB";
const ms = (v) => v == null ? "-" : v + " ms";
const time = (t) => t ? new Date(t).toLocaleTimeString() : "";

function headers() { return state.token ? { Authorization: "Bearer " + state.token } : {}; }
async function api(path) {
  const r = await fetch(path, { headers: headers() });
  if (r.status === 401) { $("token-box").style.display = "block"; throw new Error("unauthorized"); }
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function renderRunning() {
  const rows = [...state.running.values()].map((e) =>
    `<tr class="exec" data-id="${esc(e.execution_id)}"><td>${esc(e.execution_id)}</td><td>${esc(e.policy)}</td><td>${esc(e.kind)}</td>` +
    `<td>${time(e.started_at)}</td><td>${e.cpu_percent == null ? "-" : e.cpu_percent.toFixed(0) + "% <span class=bar style='width:" + Math.min(60, e.cpu_percent / 2) + "px'></span>"}</td>` +
    `<td>${mib(e.memory_bytes)}</td></tr>`);
  $("running").innerHTML = rows.join("") || `<tr><td colspan=6 class=muted>none</td></tr>`;
  $("n-running").textContent = state.running.size;
}

function renderRecent() {
  $("recent").innerHTML = state.recent.map((e) =>
    `<tr class="exec" data-id="${esc(e.execution_id)}"><td>${esc(e.execution_id)}</td><td>${esc(e.policy)}</td>` +
    `<td class="st-${esc(e.status)}">${esc(e.status)}</td><td>${esc(e.exit_code)}</td><td>${ms(e.duration_ms)}</td><td>${ms(e.cpu_ms)}</td>` +
    `<td>${mib(e.memory_peak_bytes)}</td><td>${(e.alerts || []).map((a) => esc(a.rule)).join(", ")}</td><td>${time(e.time)}</td></tr>`).join("");
  $("n-recent").textContent = state.recent.length;
}

function addAlert(a, fresh) {
  const li = document.createElement("li");
  li.className = "alert " + (a.severity || "warning") + (fresh ? " fresh" : "");
  li.dataset.rule = a.rule;
  li.dataset.execution = a.execution_id || "";
  li.innerHTML = `<b>${esc(a.rule)}</b> <span class=muted>${esc(a.severity)}</span> ${esc(a.message)}` +
    (a.address ? ` <code>${esc(a.address)}</code>` : "") + ` <span class=muted>${esc(a.execution_id || "")} ${esc(a.policy || "")}</span>`;
  $("alerts").prepend(li);
  while ($("alerts").children.length > 200) $("alerts").lastChild.remove();
  state.alerts += 1;
  $("n-alerts").textContent = state.alerts;
}

async function showDetail(id) {
  let e;
  try { e = await api("/v1/executions/" + encodeURIComponent(id)); } catch (err) { $("detail-body").textContent = String(err); return; }
  const alerts = (e.alerts || []).map((a) => `<li>${esc(a.severity)} <b>${esc(a.rule)}</b>: ${esc(a.message)}</li>`).join("");
  const trace = (e.trace || []).slice(0, 500).map((t) => `${t.time_ms}ms ${t.kind} ${t.path || t.address || ""} ${t.decision || ""}`).join("\n");
  $("detail-body").innerHTML =
    `<p><b id="detail-id">${esc(e.execution_id)}</b> policy <b>${esc(e.policy)}</b> ${esc(e.kind)} ${esc(e.language || "")} — ` +
    `<span class="st-${esc(e.status)}">${esc(e.status || e.state)}</span> exit ${esc(e.exit_code)}, wall ${ms(e.duration_ms)}, cpu ${ms(e.cpu_ms)}, ` +
    `peak ${mib(e.memory_peak_bytes)}, code ${esc(e.code_bytes)} bytes sha256 <code>${esc((e.code_sha256 || "").slice(0, 16))}…</code></p>` +
    (e.error ? `<p class="st-error">${esc(e.error)}</p>` : "") +
    `<h3>stdout</h3><pre id="detail-stdout">${esc(e.stdout)}</pre><h3>stderr</h3><pre>${esc(e.stderr)}</pre>` +
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
  }
}

async function follow() {
  for (;;) {
    try {
      const r = await fetch("/v1/events", { headers: headers() });
      if (r.status === 401) { $("token-box").style.display = "block"; }
      if (!r.ok) throw new Error("HTTP " + r.status);
      $("conn").textContent = "live"; $("conn").className = "";
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
$("token-save").onclick = () => { state.token = $("token").value; sessionStorage.setItem("lsb-token", state.token); location.reload(); };

(async () => {
  const d = await refresh();
  if (d) for (const e of d.recent.slice().reverse()) for (const a of e.alerts || []) addAlert(Object.assign({ execution_id: e.execution_id, policy: e.policy }, a), false);
  follow();
  setInterval(refresh, 10000);
})();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view DashboardPage() { return kPage; }

}  // namespace lsb::monitor
