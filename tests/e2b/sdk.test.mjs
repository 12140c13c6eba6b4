// The E2B SDKs, unchanged, against the real daemon: a user's E2B code with the three variables set.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Sandbox, CommandExitError, NotFoundError } from "@e2b/code-interpreter";
import { startDaemon } from "./daemon.mjs";

let daemon;
let sbx;
before(async () => {
  daemon = await startDaemon();
  sbx = await Sandbox.create({ timeoutMs: 300_000 }); // the whole file runs on it
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

test("files.write / read / list / makeDir / remove / rename", async () => {
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
  // Move (filesystem.Filesystem/Move) by init's file worker; the SDK gets the new entry.
  const moved = await sbx.files.rename("/tmp/work/b.txt", "/tmp/work/notes/b2.txt");
  assert.equal(moved.path, "/tmp/work/notes/b2.txt");
  assert.equal(moved.type, "file");
  assert.equal(await sbx.files.exists("/tmp/work/b.txt"), false);
  // The program sees what the client wrote: one box.
  const r = await sbx.commands.run("python3 -c \"print(open('/tmp/work/notes/b2.txt').read())\"");
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

test("a command between cells keeps the interpreter's state (one sandbox, both)", async () => {
  await sbx.runCode("x = 41");
  const c = await sbx.commands.run(`python3 -c "print('hi')"`);
  assert.equal(c.stdout, "hi\n");
  const e = await sbx.runCode("x + 1");
  assert.equal(e.text, "42", JSON.stringify(e.error));
});

test("runCode streams stdout to onStdout while the cell runs", async () => {
  const seen = [];
  const started = Date.now();
  const e = await sbx.runCode("import time\nprint('first')\ntime.sleep(1)\nprint('second')", {
    onStdout: (m) => seen.push([m.line, Date.now() - started]),
  });
  const ended = Date.now() - started;
  assert.deepEqual(seen.map((s) => s[0]).join(""), "first\nsecond\n");
  assert.ok(ended - seen[0][1] >= 800, `the first line came ${ended - seen[0][1]} ms before the cell ended: ${JSON.stringify(seen)}`);
  assert.equal(e.logs.stdout.join(""), "first\nsecond\n");
});

test("code contexts are separate globals in the sandbox's interpreter", async () => {
  const ctx = await sbx.createCodeContext();
  assert.match(ctx.id, /^ctx-[0-9a-f]{16}$/);
  await sbx.runCode("y = 'in context'", { context: ctx });
  assert.equal((await sbx.runCode("y", { context: ctx })).text, "'in context'");
  const outside = await sbx.runCode("y");
  assert.equal(outside.error?.name, "NameError", "the default context does not see it");
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
  await sbx.restartCodeContext(ctx);
  assert.equal((await sbx.runCode("y", { context: ctx })).error?.name, "NameError", "restart emptied it");
  await sbx.removeCodeContext(ctx);
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
  await assert.rejects(sbx.runCode("1", { context: ctx }), /not found/);
  assert.equal((await sbx.runCode("x")).text, "41", "the default context kept its own");
});

test("envs: at create, per command and per cell, under the policy's env rules; cwd per command", async () => {
  const s2 = await Sandbox.create({ envs: { LSB_AT_CREATE: "created" } });
  try {
    assert.equal((await s2.runCode("import os\nos.environ['LSB_AT_CREATE']")).text, "'created'");
    const c = await s2.commands.run(`python3 -c "import os; print(os.environ['LSB_AT_CREATE'], os.environ['LSB_CMD'], os.getcwd())"`,
      { envs: { LSB_CMD: "cmd" }, cwd: "/tmp" });
    assert.equal(c.stdout, "created cmd /tmp\n");
    const e = await s2.runCode("os.environ.get('LSB_CELL')", { envs: { LSB_CELL: "cell" } });
    assert.equal(e.text, "'cell'");
    assert.equal((await s2.runCode("os.environ.get('LSB_CELL')")).text, undefined, "put back after the cell");
    await assert.rejects(s2.commands.run(`python3 -c "print(1)"`, { envs: { LD_PRELOAD: "/tmp/x.so" } }), /LD_PRELOAD/);
    const refused = await s2.runCode("1", { envs: { PYTHONSTARTUP: "/tmp/x.py" } });
    assert.match(refused.error?.value ?? "", /PYTHONSTARTUP/);
    assert.equal(refused.text, undefined, "nothing ran");
  } finally {
    await s2.kill();
  }
  await assert.rejects(Sandbox.create({ envs: { LD_PRELOAD: "/tmp/x.so" } }), /LD_PRELOAD/);
});

test("stdin for commands is refused with the SDK's error saying so", async () => {
  await assert.rejects(sbx.commands.run(`python3 -c "print(1)"`, { stdin: true }), /stdin/);
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
