// The E2B SDKs, unchanged, against the real daemon: a user's E2B code with the three variables set.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Sandbox, CommandExitError, NotFoundError } from "@e2b/code-interpreter";
import { startDaemon } from "./daemon.mjs";

let daemon;
let sbx;
before(async () => {
  daemon = await startDaemon();
  sbx = await Sandbox.create({ timeoutMs: 120_000 });
});
after(async () => {
  if (sbx) await sbx.kill().catch(() => {});
  if (daemon) await daemon.stop();
});

const auditAlerts = (rule) =>
  daemon.audit().filter((r) => JSON.stringify(r).includes(`"${rule}"`));

test("create answers a sandbox the control plane knows (info, list)", async () => {
  assert.match(sbx.sandboxId, /^ses-[0-9a-f]{16}(-[A-Za-z0-9_-]+)?$/);
  const info = await sbx.getInfo();
  assert.equal(info.sandboxId, sbx.sandboxId);
  assert.equal(info.templateId, "code-interpreter-v1");
  assert.equal(info.state, "running");
  assert.ok(info.endAt > new Date(), "ends in the future");
  const listed = await Sandbox.list().nextItems();
  assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId));
  assert.equal(await sbx.isRunning(), true);
});

test("commands.run: stdout, stderr, exit code and the streaming callbacks", async () => {
  const out = [];
  const err = [];
  const r = await sbx.commands.run(`python3 -c "import sys; print('hello'); print('oops', file=sys.stderr)"`, {
    onStdout: (d) => out.push(d),
    onStderr: (d) => err.push(d),
  });
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, "hello\n");
  assert.equal(r.stderr, "oops\n");
  assert.equal(out.join(""), "hello\n");
  assert.equal(err.join(""), "oops\n");
});

test("commands.run streams output while the program runs", async () => {
  const seen = [];
  const started = Date.now();
  await sbx.commands.run(`python3 -u -c "import time; print('a'); time.sleep(1.5); print('b')"`, {
    onStdout: (d) => seen.push([d, Date.now() - started]),
  });
  assert.equal(seen.map((s) => s[0]).join(""), "a\nb\n");
  assert.ok(seen.length >= 2, "two chunks");
  assert.ok(seen[seen.length - 1][1] - seen[0][1] >= 1000, `a arrived before b: ${JSON.stringify(seen)}`);
});

test("a non-zero exit is the SDK's CommandExitError", async () => {
  await assert.rejects(sbx.commands.run(`python3 -c "import sys; print('bye'); sys.exit(3)"`), (e) => {
    assert.ok(e instanceof CommandExitError, String(e));
    assert.equal(e.exitCode, 3);
    assert.equal(e.stdout, "bye\n");
    return true;
  });
});

test("a command the policy refuses is the SDK's error with our message", async () => {
  await assert.rejects(sbx.commands.run("curl http://example.com"), (e) => {
    assert.match(e.message, /permission_denied/);
    assert.match(e.message, /curl/);
    assert.match(e.message, /commands\.allow|not allowed/);
    return true;
  });
  await assert.rejects(sbx.commands.run("echo hi | cat"), /only a shell can interpret/);
});

test("a denied exec and a network attempt inside the box are our alerts in the audit log", async () => {
  await assert.rejects(
    sbx.commands.run(`python3 -c "import subprocess; subprocess.run(['/bin/ls'])"`),
    (e) => e instanceof CommandExitError,
  );
  await assert.rejects(
    sbx.commands.run(`python3 -c "import socket; socket.create_connection(('192.0.2.1', 80), timeout=3)"`),
    (e) => e instanceof CommandExitError,
  );
  assert.ok(auditAlerts("denied_exec").length > 0, "denied_exec audited");
  assert.ok(auditAlerts("network_attempt").length > 0, "network_attempt audited");
  const rec = daemon.audit().find((r) => JSON.stringify(r).includes("denied_exec"));
  assert.match(JSON.stringify(rec), new RegExp(sbx.sandboxId), "the record names the sandbox's session");
});

test("files.write / read / list / makeDir / remove", async () => {
  const info = await sbx.files.write("/tmp/work/notes/hello.txt", "hello from e2b");
  assert.equal(info.path, "/tmp/work/notes/hello.txt");
  assert.equal(await sbx.files.read("/tmp/work/notes/hello.txt"), "hello from e2b");
  await sbx.files.write([{ path: "/tmp/work/a.txt", data: "A" }, { path: "/tmp/work/b.txt", data: "BB" }]);
  const names = (await sbx.files.list("/tmp/work")).map((e) => `${e.name}:${e.type}`).sort();
  assert.deepEqual(names, ["a.txt:file", "b.txt:file", "notes:dir"]);
  const b = (await sbx.files.list("/tmp/work")).find((e) => e.name === "b.txt");
  assert.equal(b.size, 2);
  assert.equal(await sbx.files.makeDir("/tmp/work/new"), true);
  assert.equal(await sbx.files.makeDir("/tmp/work/new"), false, "already exists");
  assert.equal(await sbx.files.exists("/tmp/work/a.txt"), true);
  await sbx.files.remove("/tmp/work/a.txt");
  assert.equal(await sbx.files.exists("/tmp/work/a.txt"), false);
  // The program sees what the client wrote: one box.
  const r = await sbx.commands.run("python3 -c \"print(open('/tmp/work/b.txt').read())\"");
  assert.equal(r.stdout, "BB\n");
});

test("runCode keeps variables across calls and reports results and errors", async () => {
  let e = await sbx.runCode("x = 41\nprint('set')");
  assert.deepEqual(e.logs.stdout, ["set\n"]);
  e = await sbx.runCode("x + 1");
  assert.equal(e.text, "42");
  assert.equal(e.error, undefined);
  e = await sbx.runCode("1/0");
  assert.equal(e.error.name, "ZeroDivisionError");
  assert.match(e.error.traceback, /ZeroDivisionError/);
  e = await sbx.runCode("x");
  assert.equal(e.text, "41", "the error did not lose the state");
});

test("runCode returns a matplotlib figure as a PNG result", async () => {
  // Imports in cells of their own: under load (cpu 0.5, load 20) importing numpy alone takes ~10 s,
  // and each cell has the policy's 30 s; the interpreter keeps the modules between cells.
  for (const imp of ["import numpy", "import matplotlib", "import matplotlib.pyplot as plt"]) {
    const i = await sbx.runCode(imp, { timeoutMs: 120_000 });
    assert.equal(i.error, undefined, `${imp}: ${JSON.stringify(i.error)}`);
  }
  const e = await sbx.runCode("plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()");
  assert.equal(e.error, undefined, JSON.stringify(e.error));
  const png = e.results.find((r) => r.png);
  assert.ok(png, `a png result: ${JSON.stringify(e.results).slice(0, 200)}`);
  assert.equal(Buffer.from(png.png, "base64").subarray(1, 4).toString(), "PNG");
});

test("kill ends the sandbox; it is gone for the SDK", async () => {
  const other = await Sandbox.create();
  assert.equal(await other.kill(), true);
  await assert.rejects(other.getInfo(), (e) => e instanceof NotFoundError);
  assert.equal(await Sandbox.kill(other.sandboxId), false);
  await assert.rejects(other.commands.run("python3 -c 'print(1)'"));
});

test("setTimeout moves the sandbox's end", async () => {
  const before = (await sbx.getInfo()).endAt;
  await sbx.setTimeout(600_000);
  const later = (await sbx.getInfo()).endAt;
  assert.ok(later - before > 300_000, `${before} -> ${later}`);
  const again = await Sandbox.connect(sbx.sandboxId);
  assert.equal((await again.commands.run("python3 -c 'print(7)'")).stdout, "7\n");
});
