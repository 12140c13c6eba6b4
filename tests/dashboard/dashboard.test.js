// The dashboard (GET /) in headless Chromium: a sandbox's connect to 127.0.0.1:6379 must appear
// on the page as an alert while the page is open, its execution in the recent list with its
// output, and its detail on click. Then, against the same daemon (with an audit log): the daemon
// and host totals, the sessions view, CPU relative to the policy's limit, the policy filter (on
// the rows loaded and on /v1/history, whose unknown values are 400s), history paged past the last
// 50 executions, and markup in output, alert paths and a policy name rendered as text; the first
// paint of a new page shows the daemon's state before any poll. Saves a screenshot in the build
// dir (dashboard-screenshot.png,
// replaced by each run; a test leaves nothing in the temp dir), or where LSB_DASHBOARD_SCREENSHOT
// says (LSB_DASHBOARD_SCREENSHOT=docs/dashboard.png refreshes the docs' one).
"use strict";
const { chromium } = require("playwright-core");
const { spawn } = require("child_process");
const fs = require("fs");
const net = require("net");
const path = require("path");
const http = require("http");

const SRC = process.env.LSB_SOURCE_DIR || path.resolve(__dirname, "../..");
const BUILD = process.env.LSB_BUILD_DIR || path.join(SRC, "build");

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

function post(base, p, body, method = "POST") {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = http.request(base + p, { method, headers: { "Content-Type": "application/json", "Content-Length": data.length } },
      (res) => { let t = ""; res.on("data", (c) => (t += c)); res.on("end", () => resolve({ status: res.statusCode, body: t ? JSON.parse(t) : null })); });
    req.on("error", reject);
    req.end(data);
  });
}

function get(base, p) {
  return new Promise((resolve, reject) => {
    http.get(base + p, (res) => { let t = ""; res.on("data", (c) => (t += c)); res.on("end", () => resolve({ status: res.statusCode, body: JSON.parse(t) })); })
      .on("error", reject);
  });
}

async function waitUp(base) {
  for (let i = 0; i < 200; i++) {
    try {
      await new Promise((resolve, reject) => http.get(base + "/healthz", (r) => { r.resume(); r.statusCode === 200 ? resolve() : reject(); }).on("error", reject));
      return;
    } catch (e) { await new Promise((r) => setTimeout(r, 100)); }
  }
  throw new Error("daemon did not start");
}

function check(cond, what) { if (!cond) throw new Error("FAILED: " + what); console.log("ok - " + what); }

const rowsOf = (page, tbody) => page.$$eval(`#${tbody} tr.exec`, (trs) => trs.map((tr) => ({
  id: tr.dataset.id, policy: tr.children[1].textContent, cpuOfLimit: tr.children[6].textContent })));

// Issue 16's dashboard: totals, sessions, CPU of limit, filters, history, escaping.
async function newSurfaces(page, base, longId) {
  // Totals (refreshed every 2 s from /v1/overview).
  const o = (await get(base, "/v1/overview")).body;
  await page.waitForFunction(() => /^\d+%$/.test(document.querySelector("#t-host-cpu").textContent) &&
    /^\d+%$/.test(document.querySelector("#t-daemon-cpu").textContent), null, { timeout: 10000 });
  check((await page.textContent("#t-workers")).endsWith(" / " + o.executor.workers), "totals: the daemon's worker count");
  check(await page.textContent("#t-queue") === `queue 0 / ${o.executor.queue_limit}`, "totals: queue depth and limit");
  check(/MiB RSS/.test(await page.textContent("#t-daemon-mem")), "totals: the daemon's memory");
  check(/GiB used/.test(await page.textContent("#t-host-mem")) && /CPUs, load/.test(await page.textContent("#t-host-load")), "totals: the host's memory, CPUs and load");
  check(/code-sandbox \d+\/\d+/.test(await page.textContent("#t-pool-policies")), "totals: warm boxes per policy");

  // CPU relative to the policy's limit: cpu_ms / (duration_ms * cpus), as the daemon reports it.
  const lx = (await get(base, "/v1/executions/" + longId)).body;
  const want = Math.round(100 * lx.cpu_ms / (lx.duration_ms * lx.cpu_limit));
  const longRow = (await rowsOf(page, "recent")).find((r) => r.id === longId);
  check(longRow && longRow.cpuOfLimit === `${want}% of ${lx.cpu_limit} CPU` && want > 20,
    `CPU relative to the policy's limit (${longRow && longRow.cpuOfLimit}, want ${want}% of ${lx.cpu_limit})`);

  // Sessions view: the caller's sessions with policy, owner, age, executions, state.
  const ses = await post(base, "/v1/sessions", {});
  const sid = ses.body.session_id;
  await post(base, `/v1/sessions/${sid}/execute`, { code: "x = 1" });
  // The view polls every 5 s: a poll that lands while the execution runs shows it counted and "busy";
  // the next one shows the session ready again.
  await page.waitForFunction((id) => { const tr = document.querySelector(`#sessions tr[data-id="${id}"]`);
    return tr && tr.querySelector(".executions").textContent === "1" && tr.children[7].textContent === "ready"; },
    sid, { timeout: 15000 });
  const cells = await page.$$eval(`#sessions tr[data-id="${sid}"] td`, (tds) => tds.map((td) => td.textContent));
  check(cells[1] === "code-sandbox" && cells[2] === "single user" && /\d+ s/.test(cells[4]) && cells[7] === "ready",
    "the sessions view shows the session: " + cells.join(" | "));
  await page.waitForFunction(() => /^1 \/ \d+$/.test(document.querySelector("#t-sessions").textContent) &&
    document.querySelector("#t-sessions-mine").textContent === "1 yours", null, { timeout: 10000 });
  check(true, "totals: live sessions, all and yours");
  await post(base, `/v1/sessions/${sid}`, {}, "DELETE");
  await page.waitForFunction((id) => !document.querySelector(`#sessions tr[data-id="${id}"]`), sid, { timeout: 15000 });
  check(true, "a closed session leaves the view");

  // Markup from a sandbox (output, an alert's path) and in a policy name is text, never markup.
  const xss = await post(base, "/v1/execute", { code: "import os\np = '/tmp/<img src=x onerror=window.__xss=3>'\nopen(p, 'w').write('x')\n" +
    "try:\n    os.execv(p, [p])\nexcept OSError as e:\n    print('<script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\">', e.errno)\n" });
  const xid = xss.body.execution_id;
  await page.waitForSelector(`#alerts li[data-rule="denied_exec"][data-execution="${xid}"]`, { timeout: 15000 });
  await page.click(`#recent tr[data-id="${xid}"]`);
  await page.waitForFunction((id) => document.querySelector("#detail-id") && document.querySelector("#detail-id").textContent === id, xid, { timeout: 10000 });
  await page.evaluate(() => onEvent("execution_finished", { execution_id: "ex-xss", policy: "<img src=x onerror=window.__xss=4>",
    status: "<script>window.__xss=5</script>", alerts: [{ rule: "<b>r</b>" }], state: "finished" }));
  const seen = await page.evaluate(() => ({ xss: window.__xss, imgs: document.querySelectorAll("img, main script, b > b").length,
    out: document.querySelector("#detail-stdout").textContent, alert: document.querySelector("#alerts li[data-rule=denied_exec]").textContent,
    row: document.querySelector('#recent tr[data-id="ex-xss"]').textContent }));
  check(seen.xss === undefined && seen.imgs === 0, "no markup from a sandbox or a policy name ran or rendered");
  check(seen.out.includes("<script>window.__xss=1</script>") && seen.alert.includes("/tmp/<img src=x") &&
    seen.row.includes("<img src=x onerror=window.__xss=4>"), "output, alert paths and policy names show as text");
  await page.evaluate(() => { state.recent = state.recent.filter((e) => e.execution_id !== "ex-xss"); renderRecent(); });

  // More than 50 executions, one of another policy: history pages past the last 50.
  const batch = await post(base, "/v1/batch", { tasks: Array.from({ length: 55 }, (_, i) => ({ code: `print(${i})` })) });
  check(batch.status === 200 && batch.body.results.every((r) => r.status === "ok"), "55 more executions");
  const bash = await post(base, "/v1/execute", { code: "echo hi", policy: "bash-tools", language: "bash" });
  check(bash.status === 200, "a bash-tools execution");
  const total = (await get(base, "/v1/history?limit=200")).body.executions.length;
  check(total >= 60, `the audit log has every execution (${total})`);
  await page.click("#history-reload");
  await page.waitForFunction(() => document.querySelectorAll("#history tr.exec").length === 50, null, { timeout: 10000 });
  check(!(await page.$eval("#history-more", (b) => b.disabled)), "history: the first page holds 50, with older ones to load");
  await page.click("#history-more");
  await page.waitForFunction((n) => document.querySelectorAll("#history tr.exec").length === n, total, { timeout: 10000 });
  const hist = await rowsOf(page, "history");
  check(new Set(hist.map((r) => r.id)).size === total && hist[hist.length - 1].id === longId,
    `history reaches the oldest execution past the last 50 (${hist.length} rows, none repeated)`);
  check(/the oldest reached/.test(await page.textContent("#history-status")), "history says when the oldest is reached");
  await page.click(`#history tr[data-id="${longId}"]`);
  await page.waitForFunction((id) => document.querySelector("#detail-id") && document.querySelector("#detail-id").textContent === id, longId, { timeout: 10000 });
  check(true, "an execution from the history opens in the detail");

  // The policy filter: over the loaded rows and, server-side, over /v1/history.
  await page.selectOption("#f-policy", "bash-tools");
  await page.waitForFunction(() => document.querySelectorAll("#history tr.exec").length === 1 && /loaded/.test(document.querySelector("#history-status").textContent), null, { timeout: 10000 });
  const recent = await rowsOf(page, "recent"), filtered = await rowsOf(page, "history");
  check(recent.length >= 1 && recent.every((r) => r.policy === "bash-tools") && filtered[0].id === bash.body.execution_id,
    "the policy filter keeps only bash-tools rows, in recent and in history");
  await page.selectOption("#f-policy", "");
  await page.waitForFunction(() => document.querySelectorAll("#history tr.exec").length === 50, null, { timeout: 10000 });
  const bad = await get(base, "/v1/history?status=bogus");
  check(bad.status === 400 && /not one of ok, error, timeout/.test(bad.body.error.message), "an unknown filter value is a 400 listing the valid ones");
}

// The cluster's view (issue 24): two daemons (nodes dash-a, dash-b) behind the real front
// (deploy/swarm/render-front.sh's HAProxy config, rendered for those two nodes and bound to
// loopback). The page through the front lists both nodes as serving; #node=dash-b pins its views
// to dash-b. A lone daemon's page (the main test) keeps the list hidden. Skipped (said so) without
// haproxy.
// Issue 37: the first paint shows the daemon's state, not "connecting". Every API request of the
// page is held unanswered here, so what it shows after load is what the daemon served in the page.
async function firstPaint(browser, base) {
  const known = (await get(base, "/v1/executions?limit=50")).body;
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  try {
    await page.route(/\/(v1|cluster|nodes)\//, () => {});  // never answered: no poll ever returns
    await page.goto(base + "/", { waitUntil: "load" });
    const conn = await page.textContent("#conn");
    check(!/connecting|loading/.test(conn), `the badge right after load says "${conn}", not connecting`);
    const recent = await page.textContent("#n-recent");
    check(recent === String(known.recent.length) && known.recent.length > 0,
      `the recent count (${recent}) is drawn from the served page before any poll (${known.recent.length})`);
    const first = known.recent[0].execution_id;
    check(await page.isVisible(`#recent tr[data-id="${first}"]`), "the latest execution is listed before any poll");
    check(/\d+ \/ \d+/.test(await page.textContent("#t-workers")), "the daemon's totals are drawn before any poll");
    const sessions = (await get(base, "/v1/sessions")).body.sessions;
    check(sessions.length > 0 && await page.isVisible(`#sessions tr[data-id="${sessions[0].session_id}"]`),
      "the open sessions are listed before any poll");
  } finally {
    await page.close();
  }
}

async function clusterView(browser, tmp) {
  const haproxy = ["/usr/sbin/haproxy", "/usr/bin/haproxy"].find((p) => fs.existsSync(p));
  if (!haproxy) { console.log("skip - the nodes view behind the front: no haproxy (scripts/install-deps.sh)"); return; }
  const procs = [];
  try {
    const ports = { "dash-a": await freePort(), "dash-b": await freePort() };
    for (const [name, p] of Object.entries(ports)) {
      const d = spawn(path.join(BUILD, "llm-sandbox"), ["serve", "--listen", `127.0.0.1:${p}`, "--policies", path.join(SRC, "policies"),
        "--images", path.join(SRC, "config", "images.yaml"), "--node-name", name, "--pool-size", "0", "--audit-log", "none"],
        { stdio: ["ignore", "ignore", "ignore"], env: { ...process.env, LLM_SANDBOX_STATE_DIR: fs.mkdtempSync(path.join(tmp, name + "-")) } });
      procs.push(d);
      await waitUp(`http://127.0.0.1:${p}`);
    }
    // render-front.sh asks `docker node ls/inspect`: answer for the two nodes (no swarm here).
    const bin = fs.mkdtempSync(path.join(tmp, "bin-"));
    fs.writeFileSync(path.join(bin, "docker"), "#!/bin/sh\ncase \"$1 $2\" in\n\"node ls\") printf 'dash-a\\ndash-b\\n';;\n" +
      "\"node inspect\") [ \"$5\" = dash-a ] && echo 10.255.0.1 || echo 10.255.0.2;;\nesac\n", { mode: 0o755 });
    const r = require("child_process").spawnSync(path.join(SRC, "deploy", "swarm", "render-front.sh"), ["8080"],
      { env: { ...process.env, PATH: bin + ":" + process.env.PATH }, encoding: "utf8" });
    if (r.status !== 0) throw new Error("render-front.sh: " + r.stderr);
    const fport = await freePort();
    const cfg = r.stdout.replace("bind :8000", `bind 127.0.0.1:${fport}`)
      .replaceAll("10.255.0.1:8080", `127.0.0.1:${ports["dash-a"]}`).replaceAll("10.255.0.2:8080", `127.0.0.1:${ports["dash-b"]}`);
    fs.writeFileSync(path.join(tmp, "front.cfg"), cfg);
    const front = spawn(haproxy, ["-db", "-f", path.join(tmp, "front.cfg")], { stdio: "ignore" });
    procs.push(front);
    const fbase = `http://127.0.0.1:${fport}`;
    await waitUp(fbase);
    const nodes = await get(fbase, "/cluster/nodes");
    check(nodes.status === 200 && nodes.body.nodes.map((n) => n.name).join() === "dash-a,dash-b", "the front lists the nodes");
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(fbase + "/");
    await page.waitForFunction(() => document.querySelectorAll("#nodes tr.node").length === 2 &&
      [...document.querySelectorAll("#nodes tr.node")].every((tr) => /serving/.test(tr.textContent)), null, { timeout: 15000 });
    const rows = await page.$$eval("#nodes tr.node", (trs) => trs.map((tr) => tr.dataset.node + ":" + tr.children[1].textContent + ":" + tr.children[2].textContent));
    check(rows.length === 2 && rows[0].startsWith("dash-a:serving:") && rows[1].startsWith("dash-b:serving:"),
      "through the front the page lists every node as serving: " + rows.join(" "));
    await page.click('#nodes a[href="#node=dash-b"]');  // pins the page to dash-b (a reload)
    await page.waitForFunction(() => document.querySelector("#n-node").textContent === "dash-b" && /node dash-b only/.test(document.querySelector("#nodes-note").textContent), null, { timeout: 15000 });
    // pinned: every refresh of the totals stays on dash-b
    await page.waitForTimeout(4500);
    check(await page.textContent("#n-node") === "dash-b", "a picked node pins the page's views to it");
    // a node that stops serving shows as down, the other stays
    procs[0].kill("SIGTERM");
    await page.waitForFunction(() => /down/.test(document.querySelector('#nodes tr[data-node="dash-a"]').textContent), null, { timeout: 20000 });
    check(/serving/.test(await page.textContent('#nodes tr[data-node="dash-b"]')), "a node that stops shows as down, the others as serving");
    check(errors.length === 0, "no script errors on the cluster page " + errors.join("; "));
    await page.close();
  } finally {
    for (const p of procs) if (p.exitCode === null) { p.kill("SIGTERM"); await new Promise((r) => (p.exitCode !== null ? r() : p.once("exit", r))); }
  }
}

(async () => {
  const port = await freePort();
  // The default audit log goes to a temp dir, never the machine's default place.
  const stateDir = fs.mkdtempSync(path.join(require("os").tmpdir(), "lsb-dashboard-state-"));
  const base = `http://127.0.0.1:${port}`;
  const tmp = fs.mkdtempSync("/tmp/lsb-dashboard-");
  const daemon = spawn(path.join(BUILD, "llm-sandbox"), ["serve", "--listen", `127.0.0.1:${port}`, "--policies", path.join(SRC, "policies"),
    "--images", path.join(SRC, "config", "images.yaml"), "--usage-interval", "250", "--audit-log", path.join(tmp, "audit.log")],
    { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, LLM_SANDBOX_STATE_DIR: stateDir } });
  let log = "";
  daemon.stderr.on("data", (d) => (log += d));
  let browser;
  let failed = false;
  try {
    await waitUp(base);
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"],
      // A fresh, empty profile: playwright makes its own temporary user data dir (it refuses
      // --user-data-dir in launch()).
    });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(base + "/");
    await page.waitForSelector("#conn.live", { timeout: 15000 });
    check(true, "the page is live on /v1/events");

    // A long run shows under "running" with live CPU/RAM, then an alert from a sandbox.
    const long = post(base, "/v1/execute", { code: "import time\nx = bytearray(30 << 20)\nend = time.time() + 2\nwhile time.time() < end: pass\nprint('long done')\n" });
    await page.waitForSelector("#running tr.exec", { timeout: 15000 });
    await page.waitForFunction(() => /MiB/.test(document.querySelector("#running").textContent), null, { timeout: 15000 });
    check(true, "a running sandbox with its live memory appears");
    await long;

    const res = await post(base, "/v1/execute", { code: "import socket\ns = socket.socket()\ntry:\n    s.connect(('127.0.0.1', 6379))\nexcept OSError as e:\n    print('connect refused', e.errno)\n" });
    check(res.status === 200 && res.body.alerts.some((a) => a.rule === "network_attempt"), "the execution raised network_attempt");
    const xid = res.body.execution_id;
    await page.waitForSelector(`#alerts li[data-rule="network_attempt"][data-execution="${xid}"]`, { timeout: 15000 });
    const text = await page.textContent(`#alerts li[data-execution="${xid}"]`);
    check(text.includes("127.0.0.1:6379"), "the alert appears live on the page with its address");
    await page.waitForSelector(`#recent tr[data-id="${xid}"]`, { timeout: 15000 });
    check(true, "the execution appears among the recent ones");
    await page.click(`#recent tr[data-id="${xid}"]`);
    await page.waitForSelector("#detail-id", { timeout: 10000 });
    const out = await page.textContent("#detail-stdout");
    check(out.includes("connect refused"), "the detail shows the execution's output");
    const longId = (await long).body.execution_id;
    await newSurfaces(page, base, longId);
    const open = await post(base, "/v1/sessions", {});  // one open session in the screenshot
    await page.waitForSelector(`#sessions tr[data-id="${open.body.session_id}"]`, { timeout: 15000 });
    await page.waitForFunction(() => /^1 \//.test(document.querySelector("#t-sessions").textContent), null, { timeout: 10000 });
    await firstPaint(browser, base);  // with that session open
    check(errors.length === 0, "no script errors on the page " + errors.join("; "));
    const shot = process.env.LSB_DASHBOARD_SCREENSHOT
      ? path.resolve(SRC, process.env.LSB_DASHBOARD_SCREENSHOT)
      : path.join(BUILD, "dashboard-screenshot.png");
    await page.screenshot({ path: shot, fullPage: true });
    console.log("screenshot: " + shot);
    check(await page.isHidden("#nodes-section"), "a lone daemon's page shows no nodes list");
    await clusterView(browser, tmp);
  } catch (e) {
    failed = true;
    console.error(e);
    console.error(log.slice(-4000));
  } finally {
    if (browser) await browser.close();
    daemon.kill("SIGTERM");
    await new Promise((r) => (daemon.exitCode !== null ? r() : daemon.once("exit", r)));
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
  console.log(failed ? "0 passed, 1 failed" : "1 passed, 0 failed");
  process.exit(failed ? 1 : 0);
})();
