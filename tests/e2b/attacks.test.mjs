// The attacker's cases against the E2B front door, as raw requests a hostile client can send:
// missing or wrong access tokens, another sandbox's id, another owner's API key, path escapes
// through /files, hostile multipart bodies and Connect envelopes that lie about their size.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Sandbox, NotFoundError, AuthenticationError } from "e2b";
import { startDaemon, TOKEN_A, TOKEN_B } from "./daemon.mjs";

let daemon;
let a; // {id, token} of owner A's sandbox
let b; // owner A's second sandbox
before(async () => {
  daemon = await startDaemon();
  for (const name of ["a", "b"]) {
    const r = await fetch(`${daemon.url}/v2/sandboxes`, {
      method: "POST",
      headers: { "X-API-KEY": TOKEN_A, "Content-Type": "application/json" },
      body: JSON.stringify({ templateID: "base", timeout: 120 }),
    });
    assert.equal(r.status, 201, await r.clone().text());
    const j = await r.json();
    const s = { id: j.sandboxID, token: j.envdAccessToken };
    if (name === "a") a = s; else b = s;
  }
});
after(async () => {
  for (const s of [a, b]) if (s) await fetch(`${daemon.url}/sandboxes/${s.id}`, { method: "DELETE", headers: { "X-API-KEY": TOKEN_A } });
  if (daemon) await daemon.stop();
});

function envd(path, { id = a.id, token = a.token, port = "49983", ...init } = {}) {
  const headers = { "E2b-Sandbox-Id": id, "E2b-Sandbox-Port": port, ...(init.headers ?? {}) };
  if (token !== null) headers["X-Access-Token"] = token;
  return fetch(`${daemon.url}${path}`, { ...init, headers });
}

function envelope(obj, declared) {
  const body = Buffer.from(JSON.stringify(obj));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(declared ?? body.length, 1);
  return Buffer.concat([head, body]);
}
// The end-stream envelope's error of a streaming answer.
async function endError(res) {
  const buf = Buffer.from(await res.arrayBuffer());
  let i = 0;
  let last;
  while (i + 5 <= buf.length) {
    const n = buf.readUInt32BE(i + 1);
    last = { flag: buf[i], msg: JSON.parse(buf.subarray(i + 5, i + 5 + n).toString()) };
    i += 5 + n;
  }
  assert.equal(last.flag, 2, "ends with an end-stream envelope");
  return last.msg.error;
}
const startBody = (line) => envelope({ process: { cmd: "/bin/bash", args: ["-l", "-c", line] } });
const startHeaders = { "Content-Type": "application/connect+json" };

test("the data plane without, or with a wrong, access token is 401 and runs nothing", async () => {
  const noToken = await envd("/process.Process/Start", { token: null, method: "POST", headers: startHeaders, body: startBody("python3 -c 'print(1)'") });
  assert.equal(noToken.status, 401);
  assert.match(await noToken.text(), /X-Access-Token/);
  const wrong = await envd("/process.Process/Start", { token: a.token.replace(/.$/, (c) => (c === "0" ? "1" : "0")), method: "POST", headers: startHeaders, body: startBody("python3 -c 'print(1)'") });
  assert.equal(wrong.status, 401);
  const health = await envd("/health", { token: null });
  assert.equal(health.status, 401);
});

test("one sandbox's token does not open another sandbox", async () => {
  const r = await envd("/files?path=/tmp/x", { id: b.id, token: a.token });
  assert.equal(r.status, 401);
  const unknown = await envd("/health", { id: "ses-0000000000000000", token: a.token });
  assert.equal(unknown.status, 401);
  assert.equal((await envd("/health")).status, 204);
});

test("the E2b-Sandbox-Id header does not turn a v1 route into an unauthenticated one", async () => {
  const r = await envd("/v1/sessions", {});
  assert.equal(r.status, 404);
  const list = await fetch(`${daemon.url}/v1/sessions`, { headers: { "E2b-Sandbox-Id": a.id } });
  assert.equal(list.status, 502, "no port: not served, and never the v1 route");
  assert.doesNotMatch(await list.text(), /sessions/);
  const ported = await fetch(`${daemon.url}/v1/sessions`, { headers: { "E2b-Sandbox-Id": a.id, "E2b-Sandbox-Port": "49983" } });
  assert.equal(ported.status, 401);
});

test("another owner's API key neither sees nor kills the sandbox", async () => {
  await assert.rejects(Sandbox.getInfo(a.id, { apiKey: TOKEN_B }), (e) => e instanceof NotFoundError);
  assert.equal(await Sandbox.kill(a.id, { apiKey: TOKEN_B }), false);
  const listed = await Sandbox.list({ apiKey: TOKEN_B }).nextItems();
  assert.equal(listed.length, 0);
  await assert.rejects(Sandbox.getInfo(a.id, { apiKey: "not-a-token" }), (e) => e instanceof AuthenticationError);
  const none = await fetch(`${daemon.url}/v2/sandboxes`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  assert.equal(none.status, 401);
  assert.equal((await envd("/health")).status, 204, "still alive");
});

test("paths that leave the writable dirs are refused by /files and the filesystem calls", async () => {
  for (const p of ["/etc/passwd", "/tmp/../etc/passwd", "/proc/self/environ", "../../etc/passwd", "/tmp"]) {
    const r = await envd(`/files?path=${encodeURIComponent(p)}`);
    assert.equal(r.status, 400, `${p}: ${r.status}`);
  }
  const up = await envd("/files?path=/etc/cron.d/x", { method: "POST", headers: { "Content-Type": "application/octet-stream" }, body: "x" });
  assert.equal(up.status, 400);
  const rm = await envd("/filesystem.Filesystem/Remove", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ path: "/usr/bin/python3" }) });
  assert.equal(rm.status, 400);
  assert.equal((await rm.json()).code, "invalid_argument");
  // A symlink the program planted is not followed by the download.
  const ln = await envd("/process.Process/Start", { method: "POST", headers: startHeaders, body: startBody(`python3 -c "import os; os.symlink('/etc/passwd', '/tmp/ln')"`) });
  assert.equal(ln.status, 200);
  await ln.arrayBuffer();
  const via = await envd("/files?path=/tmp/ln");
  assert.notEqual(via.status, 200);
  assert.doesNotMatch(await via.text(), /root:/);
});

test("hostile multipart bodies are refused with what is wrong", async () => {
  const post = (body, type) => envd("/files", { method: "POST", headers: { "Content-Type": type }, body });
  const B = "XyZ";
  const part = (name, data) => `--${B}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n\r\n${data}\r\n`;
  let r = await post(part("/tmp/ok.txt", "data"), `multipart/form-data; boundary=${B}`);
  assert.equal(r.status, 400, "no closing boundary");
  assert.match(await r.text(), /closing|ends inside/);
  r = await post(part("/tmp/../etc/x", "d") + `--${B}--\r\n`, `multipart/form-data; boundary=${B}`);
  assert.equal(r.status, 400);
  r = await post(part("/tmp/a", "d") + `--${B}--\r\n`, "multipart/form-data");
  assert.equal(r.status, 400, "no boundary");
  r = await post(Array.from({ length: 65 }, (_, i) => part(`/tmp/f${i}`, "d")).join("") + `--${B}--\r\n`, `multipart/form-data; boundary=${B}`);
  assert.equal(r.status, 400);
  assert.match(await r.text(), /more than 64 parts/);
  r = await post(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="/tmp/h"\r\n${"X-Pad: y\r\n".repeat(2000)}\r\nd\r\n--${B}--\r\n`, `multipart/form-data; boundary=${B}`);
  assert.equal(r.status, 400, "headers past the bound");
  // Nothing of the refused uploads was written.
  const gone = await envd("/files?path=/tmp/ok.txt");
  assert.equal(gone.status, 404);
  r = await post(part("/tmp/good.txt", "fine") + `--${B}--\r\n`, `multipart/form-data; boundary=${B}`);
  assert.equal(r.status, 200);
  assert.equal(await (await envd("/files?path=/tmp/good.txt")).text(), "fine");
});

test("Connect envelopes that lie about their size, or are not one plain message, are refused", async () => {
  const post = (body, type = "application/connect+json") => envd("/process.Process/Start", { method: "POST", headers: { "Content-Type": type }, body });
  let e = await endError(await post(envelope({ process: { cmd: "python3" } }, 0xffffffff)));
  assert.equal(e.code, "resource_exhausted");
  e = await endError(await post(envelope({ process: { cmd: "python3" } }, 3)));
  assert.equal(e.code, "invalid_argument");
  const compressed = envelope({ process: { cmd: "python3" } });
  compressed[0] = 1;
  e = await endError(await post(compressed));
  assert.match(e.message, /compress/);
  e = await endError(await post(Buffer.from([0, 0])));
  assert.equal(e.code, "invalid_argument");
  e = await endError(await post(envelope({ process: { cmd: "python3" } }), "application/json"));
  assert.equal(e.code, "invalid_argument");
  const unary = await envd("/filesystem.Filesystem/ListDir", { method: "POST", headers: { "Content-Type": "application/json" }, body: "x".repeat(2 << 20) });
  assert.ok([413, 429].includes(unary.status) || unary.status === 400, String(unary.status));
  assert.equal((await envd("/health")).status, 204, "the sandbox still answers");
});

test("a shell line is not reinterpreted without a shell in the policy", async () => {
  for (const line of ["python3 -c 'print(1)' > /tmp/out", "python3 $HOME", "A=1 python3", "python3 `id`", "python3 -c 'print(1)'; id"]) {
    const e = await endError(await envd("/process.Process/Start", { method: "POST", headers: startHeaders, body: startBody(line) }));
    assert.equal(e.code, "invalid_argument", line);
  }
});

function interp(path, { id = a.id, token = a.token, ...init } = {}) {
  const headers = { "E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999", "Content-Type": "application/json" };
  if (token !== null) headers["E2B-Traffic-Access-Token"] = token; // what the SDK sends on /contexts
  return fetch(`${daemon.url}${path}`, { ...init, headers });
}

test("code contexts: the traffic token is required, another sandbox's context is not found, the count is bounded", async () => {
  assert.equal((await interp("/contexts", { token: null })).status, 401);
  assert.equal((await interp("/contexts", { token: b.token })).status, 401, "b's token does not open a");
  const made = await interp("/contexts", { method: "POST", body: "{}" });
  assert.equal(made.status, 200);
  const { id } = await made.json();
  // b cannot run in, restart or remove a's context, even knowing its id.
  const run = await interp("/execute", { id: b.id, token: b.token, method: "POST", body: JSON.stringify({ code: "1", context_id: id }) });
  assert.equal(run.status, 404);
  assert.equal((await interp(`/contexts/${id}`, { id: b.id, token: b.token, method: "DELETE" })).status, 404);
  assert.equal((await interp(`/contexts/${id}/restart`, { id: b.id, token: b.token, method: "POST" })).status, 404);
  assert.equal((await interp("/contexts/default", { method: "DELETE" })).status, 400);
  assert.equal((await interp("/contexts", { method: "POST", body: JSON.stringify({ cwd: "/etc" }) })).status, 400);
  // At most 8 besides default.
  const ids = [id];
  for (let i = 1; i < 8; i++) ids.push((await (await interp("/contexts", { method: "POST", body: "{}" })).json()).id);
  const over = await interp("/contexts", { method: "POST", body: "{}" });
  assert.equal(over.status, 400);
  assert.match(await over.text(), /maximum of 8 contexts/);
  assert.equal((await (await interp("/contexts")).json()).length, 9);
  for (const c of ids) assert.equal((await interp(`/contexts/${c}`, { method: "DELETE" })).status, 204);
  assert.equal((await (await interp("/contexts")).json()).length, 1);
});
