/** The TypeScript client against the REAL daemon: every operation of docs/api.md and its errors. */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  BadRequest, ConnectionFailed, Forbidden, NotFound, RequestTimedOut, SandboxClient, SandboxError, Unauthorized,
  VERSION, archiveEntry, isBatchError, outputBytes, type ExecResult, type StreamEvent,
} from "@llm-sandbox/client";
import { Daemon } from "./harness.js";

let daemon: Daemon;
let client: SandboxClient;

before(async () => {
  daemon = await Daemon.start();
  client = new SandboxClient({ baseUrl: daemon.url, policy: "code-sandbox" });
});
after(async () => { await daemon?.stop(); });

describe("one-shot executions", () => {
  test("the requirements' example: execute returns stdout", async () => {
    const r = await client.execute("print(6 * 7)");
    assert.equal(r.stdout, "42\n");
    assert.equal(r.exit_code, 0);
    assert.equal(r.status, "ok");
    assert.equal(r.policy, "code-sandbox");
    for (const k of ["stderr", "duration_ms", "cpu_ms", "alerts", "truncated", "execution_id", "backend"]) {
      assert.ok(k in r, `result has ${k}`);
    }
  });

  test("stdin, env and files (text and bytes) reach the program", async () => {
    const r = await client.execute(
      "import os,sys\nprint(sys.stdin.read().strip(), os.environ['GREETING'])\n" +
      "print(open('/tmp/a.txt').read())\nprint(list(open('/tmp/b.bin','rb').read()))",
      { stdin: "from stdin", env: { GREETING: "hello" },
        files: { "/tmp/a.txt": "text file", "/tmp/b.bin": new Uint8Array([0, 255, 10]) } });
    assert.equal(r.stdout, "from stdin hello\ntext file\n[0, 255, 10]\n");
  });

  test("a failing program is a result, not an error", async () => {
    const r = await client.execute("import sys; print('bye'); sys.exit(3)");
    assert.equal(r.exit_code, 3);
    assert.equal(r.status, "error");
  });

  test("an exec the policy denies is reported with an alert", async () => {
    const r = await client.execute("import os\nos.system('/bin/sh -c true')\nprint('after')");
    assert.ok(r.alerts.length > 0, JSON.stringify(r));
  });

  test("stream yields stdout chunks and the result last", async () => {
    const events: StreamEvent[] = [];
    for await (const ev of client.stream("import sys,time\nfor i in range(3):\n  print(i, flush=True)\n  time.sleep(0.05)\nprint('err', file=sys.stderr)")) {
      events.push(ev);
    }
    const last = events.at(-1)!;
    assert.equal(last.kind, "result");
    assert.equal((last.data as ExecResult).exit_code, 0);
    const out = events.filter((e) => e.kind === "stdout").map((e) => e.data).join("");
    const err = events.filter((e) => e.kind === "stderr").map((e) => e.data).join("");
    assert.equal(out, "0\n1\n2\n");
    assert.equal(err, "err\n");
  });

  test("output that is not UTF-8 decodes to its exact bytes, in results and stream events", async () => {
    const code = "import sys\nsys.stdout.buffer.write(bytes(range(256)))\n";
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const r = await client.execute(code);
    assert.deepEqual(outputBytes(r, "stdout"), all);
    assert.ok(r.stdout.includes("\ufffd"));
    const pieces: Uint8Array[] = [];
    for await (const ev of client.stream(code)) if (ev.kind === "stdout") pieces.push((ev as { bytes: Uint8Array }).bytes);
    assert.deepEqual(new Uint8Array(Buffer.concat(pieces)), all);
  });

  test("a timeout is exit code 124 and a SIGTERM handler keeps its summary", async () => {
    const r = await client.execute(
      "import signal, sys, time\ndef done(*_):\n    print('summary')\n    sys.exit(1)\n" +
        "signal.signal(signal.SIGTERM, done)\ntime.sleep(100)\n", { timeout: 1 });
    assert.equal(r.status, "timeout");
    assert.equal(r.exit_code, 124);
    assert.equal(r.stdout, "summary\n");
  });

  test("breaking out of a stream closes it without hanging", async () => {
    for await (const ev of client.stream("import time\nprint('x', flush=True)\ntime.sleep(5)")) {
      if (ev.kind === "stdout") break;
    }
  });

  test("batch returns results in request order, each from its own box", async () => {
    const tasks = Array.from({ length: 5 }, (_, i) => `import os\nopen('/tmp/mark','a').write('x')\nprint(${i}, len(open('/tmp/mark').read()))`);
    const results = await client.batch(tasks, { concurrency: 3 });
    assert.equal(results.length, 5);
    results.forEach((r, i) => {
      assert.ok(!isBatchError(r));
      assert.equal((r as ExecResult).stdout, `${i} 1\n`);
    });
  });

  test("a refused batch task comes back as an error entry, or thrown with raiseOnError", async () => {
    const results = await client.batch(["print(1)", { code: "print(2)", policy: "no-such-policy" }]);
    assert.equal((results[0] as ExecResult).stdout, "1\n");
    assert.ok(isBatchError(results[1]));
    // The daemon refuses a body naming an unknown policy as a bad request (400), with the names it has.
    await assert.rejects(client.batch([{ code: "print(2)", policy: "no-such-policy" }], { raiseOnError: true }), BadRequest);
  });
});

describe("asynchronous executions", () => {
  test("executeAsync returns a handle at once; waitExecution and getExecution fetch the result later", async () => {
    const handle = await client.executeAsync("import time\ntime.sleep(0.5)\nprint('later')");
    const id = handle.id;  // a handle like submit's (issue 37); String(handle) is the id it used to return
    assert.match(id, /^ex-/);
    assert.equal(String(handle), id);
    assert.equal((await client.waitExecution(handle, { timeout: 60 })).stdout, "later\n");
    const early = await client.getExecution(id);
    assert.equal(early.execution_id, id);
    assert.ok(["queued", "running", "finished"].includes(early.state), JSON.stringify(early));
    const r = await client.waitExecution(id, { timeout: 60 });
    assert.equal(r.stdout, "later\n");
    assert.equal(r.execution_id, id);
    const kept = await client.getExecution(id);
    assert.equal(kept.state, "finished");
    assert.equal(kept.result?.stdout, "later\n");
  });

  test("an unknown execution id is NotFound; a short wait is RequestTimedOut and the result stays", async () => {
    await assert.rejects(client.getExecution("ex-00000000deadbeef"), NotFound);
    const id = (await client.executeAsync("import time\ntime.sleep(1)\nprint('slow')")).id;
    await assert.rejects(client.waitExecution(id, { timeout: 0.1 }), RequestTimedOut);
    assert.equal((await client.waitExecution(id)).stdout, "slow\n");
  });

  test("submit returns a handle whose result long-polls; execution(id) finds it again; a short timeout keeps it", async () => {
    const h = await client.submit("import time\ntime.sleep(1)\nprint('handled')");
    assert.match(h.id, /^ex-/);
    await assert.rejects(h.result(0.2), RequestTimedOut);
    const r = await client.execution(h.id).result(60);
    assert.equal(r.stdout, "handled\n");
    assert.equal((await h.status()).state, "finished");
    await assert.rejects(client.submit("1", { policy: "no-such-policy" }), SandboxError);
  });

  test("submitBatch keeps the batch's whole answer", async () => {
    const answer = await (await client.submitBatch(["print(1)", "print(2)"], { concurrency: 2 })).result(60);
    assert.deepEqual(answer.results.map((x) => (x as ExecResult).stdout), ["1\n", "2\n"]);
  });
});

describe("parity with the API (issue 37)", () => {
  test("pause and resume keep the variables; resumeSession by id; fork returns its report", async () => {
    const s = await client.session({ language: "python" });
    try {
      await s.execute("x = 41\nimport json");
      const forked = await s.fork(2);
      try {
        assert.equal(forked.length, 2);
        assert.equal(forked.report.parent, s.id);
        assert.ok(forked.report.carried.globals.includes("x"), JSON.stringify(forked.report));
        assert.ok(forked.report.carried.modules.includes("json"), JSON.stringify(forked.report));
        assert.equal((await forked[1].execute("print(x)")).stdout, "41\n");
      } finally {
        for (const c of forked) await c.close();
      }
      const paused = await s.pause();
      assert.equal(paused.state, "paused");
      assert.match(paused.pause.not_kept, /processes/);
      const info = await s.resume();
      assert.ok(info.resume.carried.globals.includes("x"), JSON.stringify(info));
      assert.equal((await s.execute("print(x + 1)")).stdout, "42\n");
      await s.pause();
      const again = await client.resumeSession(s.id);
      assert.equal((await again.execute("print(x)")).stdout, "41\n");
    } finally {
      await s.close();
    }
  });

  test("the monitoring routes, history, images and the event streams", async () => {
    const done = await client.execute("print('seen')");
    const listed = await client.listExecutions({ limit: 5 });
    assert.ok(listed.recent.some((e) => e.execution_id === done.execution_id), JSON.stringify(listed));
    assert.ok("executor" in await client.overview());
    assert.ok(Array.isArray(await client.images()));
    const page = await client.history({ limit: 5 });
    assert.ok(page.executions.some((e) => e.execution_id === done.execution_id), JSON.stringify(page));
    const later = setTimeout(() => { client.execute("print('evented')").catch(() => undefined); }, 500);
    // A bounded wait: a stream that never delivers fails the test instead of hanging it.
    for await (const ev of client.events({ types: ["execution_finished"], signal: AbortSignal.timeout(20_000) })) {
      assert.equal(ev.event, "execution_finished");
      break;
    }
    clearTimeout(later);
    const s = await client.session({ language: "python" });
    try {
      await s.execute("import os; os.makedirs('/tmp/w', exist_ok=True)");
      const writer = setTimeout(() => { s.upload("/tmp/w/new.txt", "x").catch(() => undefined); }, 500);
      for await (const ev of s.watch("/tmp/w", { signal: AbortSignal.timeout(20_000) })) {
        if ((ev.data as { path?: string } | undefined)?.path === "/tmp/w/new.txt") break;
      }
      clearTimeout(writer);
    } finally {
      await s.close();
    }
  });
});

describe("sessions", () => {
  test("variables and files persist; upload and download are byte-exact; close is idempotent", async () => {
    const s = await client.session({ language: "python" });
    try {
      assert.match(s.id, /.+/);
      assert.equal(s.policy, "code-sandbox");
      await s.execute("x = 20");
      assert.equal((await s.execute("print(x + 22)")).stdout, "42\n");
      const bytes = new Uint8Array([1, 2, 3, 0, 250]);
      const up = await s.upload("/tmp/in.bin", bytes);
      assert.deepEqual(up, { path: "/tmp/in.bin", size: 5 });
      await s.upload("/tmp/data.csv", "a,b\n1,2\n");
      assert.equal((await s.execute("print(sum(open('/tmp/in.bin','rb').read()))")).stdout, "256\n");
      await s.execute("open('/tmp/out.txt','w').write('made in the box')");
      assert.equal(await s.downloadText("/tmp/out.txt"), "made in the box");
      assert.deepEqual(await s.download("/tmp/in.bin"), bytes);
      await assert.rejects(s.download("/tmp/absent"), NotFound);
      const info = await s.info();
      assert.ok(info.executions >= 4);
      assert.ok((await client.listSessions()).some((x) => x.session_id === s.id));
      const again = await client.attachSession(s.id);
      assert.equal((await again.execute("print(x)")).stdout, "20\n");
    } finally {
      await s.close();
    }
    await s.close();
    assert.ok(s.closed);
    await assert.rejects(client.attachSession(s.id), NotFound);
  });

  test("reset returns to the state after setup and snapshot; files of the episode are gone", async () => {
    const s = await client.session({ language: "python", setup: "import decimal\nBASE = 1" });
    try {
      assert.equal(typeof (await s.info()).setup_ms, "number");
      await s.execute("kept = 2\nopen('/tmp/kept.txt','w').write('k')");
      assert.equal((await s.snapshot()).snapshots, 1);
      await s.execute("episode = 3\nopen('/tmp/episode.txt','w').write('e')");
      const r = await s.reset();
      assert.equal(r.reset.mode, "interpreter");
      assert.equal(r.resets, 1);
      const out = await s.execute("import os\nprint(BASE, kept, 'episode' in globals(), sorted(os.listdir('/tmp')))");
      assert.equal(out.stdout, "1 2 False ['kept.txt']\n");
    } finally {
      await s.close();
    }
  });

  test("withSession closes the session even when the callback throws", async () => {
    let id = "";
    await assert.rejects(client.withSession(async (s) => { id = s.id; throw new Error("boom"); }), /boom/);
    await assert.rejects(client.attachSession(id), NotFound);
  });

  test("uploadDir sends a tree (ignoring .git), a command runs it, collect and downloadDir bring files back", async () => {
    const src = mkdtempSync(join(tmpdir(), "lsb-up-"));
    const dst = mkdtempSync(join(tmpdir(), "lsb-down-"));
    mkdirSync(join(src, "pkg", "sub"), { recursive: true });
    mkdirSync(join(src, ".git"));
    writeFileSync(join(src, ".git", "HEAD"), "ref");
    writeFileSync(join(src, "pkg", "sub", "mod.py"), "VALUE = 7\n");
    writeFileSync(join(src, "pkg", "__init__.py"), "");
    await client.withSession(async (s) => {
      const up = await s.uploadDir(src, "/tmp/work");
      assert.equal(up.format, "tar+gzip");
      assert.equal(up.files, 2);
      const r = await s.execute(["python3", "-c", "import os; print(sorted(os.listdir('/tmp/work')))"],
        { collect: ["/tmp/work/pkg/sub/*.py"] });
      assert.equal(r.stdout, "['pkg']\n", JSON.stringify(r));
      assert.deepEqual(r.collected, [{ path: "/tmp/work/pkg/sub/mod.py", size: 10, content: "VALUE = 7\n" }]);
      await s.execute("open('/tmp/work/pkg/out.txt','w').write('made in the box')");
      const written = await s.downloadDir("/tmp/work", dst);
      assert.ok(written.some((f) => f.endsWith("out.txt")), JSON.stringify(written));
      assert.equal(readFileSync(join(dst, "pkg", "out.txt"), "utf8"), "made in the box");
    });
    const one = await client.execute(["python3", "-c", "print(open('/tmp/w/pkg/sub/mod.py').read(), end='')"],
      { files: [archiveEntry("/tmp/w", src)] });
    assert.equal(one.stdout, "VALUE = 7\n", JSON.stringify(one));
  });

  test("the file-system API and changes() in a node session (no python in the box)", async () => {
    await client.withSession(async (s) => {
      await s.upload("/tmp/p/a.txt", "one\n");
      const r = await s.execute("require('fs').appendFileSync('/tmp/p/a.txt', 'two\\n'); globalThis.kept = 7;");
      assert.equal(r.status, "ok", JSON.stringify(r));
      const ch = await s.changes("/tmp/p");
      assert.deepEqual(ch.files.map((f) => [f.path, f.change]), [["/tmp/p/a.txt", "modified"]], JSON.stringify(ch));
      assert.match(ch.patch, /\+two/);
      await s.mkdir("/tmp/p/d/e", { parents: true });
      await s.rename("/tmp/p/a.txt", "/tmp/p/d/b.txt");
      const listing = await s.listDir("/tmp/p/d");
      assert.deepEqual(listing.entries.map((e) => [e.name, e.type]), [["b.txt", "file"], ["e", "dir"]]);
      assert.equal((await s.stat("/tmp/p/d/b.txt")).size, 8);
      await s.remove("/tmp/p/d/e");
      await assert.rejects(s.stat("/tmp/p/d/e"), NotFound);
      assert.equal((await s.execute("console.log(kept)")).stdout, "7\n");
    }, { policy: "node", changes: true });
  });

  test("a path outside the policy's tmpfs is a BadRequest", async () => {
    await client.withSession(async (s) => {
      await assert.rejects(s.upload("/etc/passwd", "x"), BadRequest);
    });
  });
});

describe("policies and health", () => {
  test("policies lists names and descriptions; policy() explains one", async () => {
    const ps = await client.policies();
    const strict = ps.find((p) => p.name === "python-strict");
    assert.ok(strict, JSON.stringify(ps));
    assert.match(strict.description, /Untrusted Python/);
    const detail = await client.getPolicy("python-strict");
    assert.equal(detail.name, "python-strict");
    assert.ok(Array.isArray(detail.explain));
    assert.equal((await client.health()).status, "ok");
    assert.equal((await client.ready()).status, "ready");
  });
});

describe("typed errors", () => {
  test("asking for more than the policy allows is Forbidden and names the field", async () => {
    const err = await client.execute("print(1)", { timeout: 9999 }).then(() => undefined, (e) => e);
    assert.ok(err instanceof Forbidden, String(err));
    assert.ok(err instanceof SandboxError);
    assert.equal(err.status, 403);
    assert.equal(err.code, "forbidden");
    assert.match(err.message, /timeout/);
  });

  test("an unknown policy or language is BadRequest; an unknown policy by name is NotFound", async () => {
    await assert.rejects(client.execute("print(1)", { policy: "no-such-policy" }), /no policy named 'no-such-policy'/);
    await assert.rejects(client.execute("print(1)", { policy: "no-such-policy" }), BadRequest);
    await assert.rejects(client.getPolicy("no-such-policy"), NotFound);
    await assert.rejects(client.execute("print(1)", { language: "cobol" }), BadRequest);
  });

  test("no daemon at the address is ConnectionFailed", async () => {
    const dead = new SandboxClient({ baseUrl: "http://127.0.0.1:9", timeout: 5 });
    await assert.rejects(dead.execute("print(1)"), ConnectionFailed);
  });

  test("token auth: Unauthorized without or with a wrong token, ok with the right one", async () => {
    const secured = await Daemon.start({ LLM_SANDBOX_TOKENS: "tok-one,tok-two" });
    try {
      const none = new SandboxClient({ baseUrl: secured.url, token: "" });
      await assert.rejects(none.execute("print(1)"), Unauthorized);
      const wrong = new SandboxClient({ baseUrl: secured.url, token: "nope" });
      await assert.rejects(wrong.policies(), Unauthorized);
      const good = new SandboxClient({ baseUrl: secured.url, token: "tok-two" });
      assert.equal((await good.execute("print('in')")).stdout, "in\n");
      assert.equal((await none.health()).status, "ok");
    } finally {
      await secured.stop();
    }
  });
});

test("VERSION matches package.json", () => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(VERSION, pkg.version);
});
