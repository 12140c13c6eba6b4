// The dashboard (GET /) in headless Chromium: a sandbox's connect to 127.0.0.1:6379 must appear
// on the page as an alert while the page is open, its execution in the recent list with its
// output, and its detail on click. Saves a screenshot in the build dir (dashboard-screenshot.png,
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

function post(base, p, body) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = http.request(base + p, { method: "POST", headers: { "Content-Type": "application/json", "Content-Length": data.length } },
      (res) => { let t = ""; res.on("data", (c) => (t += c)); res.on("end", () => resolve({ status: res.statusCode, body: JSON.parse(t) })); });
    req.on("error", reject);
    req.end(data);
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

(async () => {
  const port = await freePort();
  // The default audit log goes to a temp dir, never the machine's default place.
  const stateDir = fs.mkdtempSync(path.join(require("os").tmpdir(), "lsb-dashboard-state-"));
  const base = `http://127.0.0.1:${port}`;
  const daemon = spawn(path.join(BUILD, "llm-sandbox"), ["serve", "--listen", `127.0.0.1:${port}`, "--policies", path.join(SRC, "policies"),
    "--images", path.join(SRC, "config", "images.yaml"), "--usage-interval", "250"],
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
    await page.waitForSelector("#conn:not(.down)", { timeout: 15000 });
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
    check(errors.length === 0, "no script errors on the page " + errors.join("; "));
    const shot = process.env.LSB_DASHBOARD_SCREENSHOT
      ? path.resolve(SRC, process.env.LSB_DASHBOARD_SCREENSHOT)
      : path.join(BUILD, "dashboard-screenshot.png");
    await page.screenshot({ path: shot, fullPage: true });
    console.log("screenshot: " + shot);
  } catch (e) {
    failed = true;
    console.error(e);
    console.error(log.slice(-4000));
  } finally {
    if (browser) await browser.close();
    daemon.kill("SIGTERM");
    await new Promise((r) => (daemon.exitCode !== null ? r() : daemon.once("exit", r)));
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
  console.log(failed ? "0 passed, 1 failed" : "1 passed, 0 failed");
  process.exit(failed ? 1 : 0);
})();
