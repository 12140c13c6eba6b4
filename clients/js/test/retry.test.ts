/**
 * Retries of 429/503, Retry-After (seconds and HTTP date), the policy-timeout wait and the JSON
 * Content-Type: first against a small real HTTP server on loopback (node:http) that answers what
 * each test scripts, then against the REAL daemon with one worker and one queue place under a
 * burst, and with a policy whose timeout is longer than the client's own.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  RateLimited, RequestTimedOut, SandboxClient, SandboxError, Unavailable, parseRetryAfter, type ExecResult,
} from "@llm-sandbox/client";
import { Daemon, SOURCE_DIR } from "./harness.js";

const RESULT = {
  stdout: "42\n", stderr: "", exit_code: 0, status: "ok", duration_ms: 1, cpu_ms: 1, memory_peak_bytes: null,
  alerts: [], truncated: false, execution_id: "ex-1", backend: "native", policy: "code-sandbox",
};

interface Seen { method: string; url: string; contentType?: string; body: string }
type Answer = { status: number; headers?: Record<string, string>; body?: unknown; delayMs?: number };

/** A real HTTP server on 127.0.0.1:<free port>; `script` answers each request, `seen` logs them. */
class ScriptedServer {
  seen: Seen[] = [];
  lookups: Seen[] = [];
  script: (req: Seen) => Answer = () => ({ status: 200, body: RESULT });
  /** The policy timeout the server reports (GET /v1/policies/{name}); undefined: none. */
  policyTimeoutMs: number | undefined = 30_000;
  private server!: Server;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  reset(): void {
    this.seen = [];
    this.lookups = [];
    this.policyTimeoutMs = 30_000;
    this.script = () => ({ status: 200, body: RESULT });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const seen = { method: req.method ?? "", url: req.url ?? "", contentType: req.headers["content-type"], body: Buffer.concat(chunks).toString() };
    let answer: Answer;
    if (seen.method === "GET" && seen.url.startsWith("/v1/policies/")) {
      this.lookups.push(seen);
      const resources = this.policyTimeoutMs === undefined ? {} : { timeout_ms: this.policyTimeoutMs };
      answer = { status: 200, body: { name: seen.url.split("/").pop(), policy: { resources }, explain: [] } };
    } else {
      this.seen.push(seen);
      answer = this.script(seen);
    }
    if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
    const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body ?? {});
    res.writeHead(answer.status, { "Content-Type": "application/json", ...answer.headers });
    res.end(text);
  }
}

function refusal(status: 429 | 503, retryAfter: string): Answer {
  const code = status === 429 ? "too_many_requests" : "unavailable";
  return { status, headers: { "Retry-After": retryAfter }, body: { error: { code, message: "later" } } };
}

describe("retries and timeouts against a scripted loopback server", () => {
  const srv = new ScriptedServer();
  before(() => srv.start());
  after(() => srv.stop());
  const client = (opts: Record<string, unknown> = {}) => new SandboxClient({ baseUrl: srv.url, ...opts });

  test("429 then 200: retried by default after the Retry-After", async () => {
    srv.reset();
    const answers = [refusal(429, "0.3"), refusal(503, "0"), { status: 200, body: RESULT }];
    srv.script = () => answers.shift()!;
    const t0 = Date.now();
    assert.equal((await client().execute("x")).stdout, "42\n");
    assert.ok(Date.now() - t0 >= 300, `waited ${Date.now() - t0} ms`);
    assert.equal(srv.seen.length, 3);
    assert.equal(srv.seen[2].body, srv.seen[0].body);
  });

  test("retries: 0 turns retrying off", async () => {
    srv.reset();
    srv.script = () => refusal(429, "0");
    await assert.rejects(client({ retries: 0 }).execute("x"), RateLimited);
    assert.equal(srv.seen.length, 1);
  });

  test("bounded: by the count, and never sooner than asked or past the budget", async () => {
    srv.reset();
    srv.script = () => refusal(429, "0");
    await assert.rejects(client({ retries: 2 }).execute("x"), RateLimited);
    assert.equal(srv.seen.length, 3);

    srv.reset();
    srv.script = () => refusal(429, "60");  // longer than the whole budget: raised at once
    const t0 = Date.now();
    const err = await client().execute("x").then(() => undefined, (e) => e);
    assert.ok(err instanceof RateLimited, String(err));
    assert.equal(err.retryAfter, 60);
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(srv.seen.length, 1);

    srv.reset();
    srv.script = () => refusal(503, "0.3");  // 0.3 s (+ up to 20%) per wait in a 1 s budget
    await assert.rejects(client({ retryBudget: 1 }).execute("x"), Unavailable);
    assert.ok(srv.seen.length === 3 || srv.seen.length === 4, String(srv.seen.length));
  });

  test("Retry-After as an HTTP date", async () => {
    srv.reset();
    const answers = [refusal(429, new Date(Date.now() + 2000).toUTCString()), { status: 200, body: RESULT }];
    srv.script = () => answers.shift()!;
    const t0 = Date.now();
    assert.equal((await client().execute("x")).stdout, "42\n");
    assert.ok(Date.now() - t0 >= 900, `waited ${Date.now() - t0} ms`);  // the date has 1 s resolution
    assert.equal(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
    assert.equal(parseRetryAfter(new Date(31_000).toUTCString(), 1_000), 30);
    assert.equal(parseRetryAfter("soon"), undefined);
    assert.equal(parseRetryAfter("2"), 2);
  });

  test("a POST is not retried on a bare 503 (a proxy's); a GET is", async () => {
    srv.reset();
    srv.script = () => ({ status: 503, headers: { "Retry-After": "0" }, body: "<h1>upstream down</h1>" });
    await assert.rejects(client().execute("x"), Unavailable);
    assert.equal(srv.seen.length, 1);
    srv.reset();
    const answers: Answer[] = [{ status: 503, headers: { "Retry-After": "0" }, body: "<h1>down</h1>" }, { status: 200, body: { status: "ok" } }];
    srv.script = () => answers.shift()!;
    assert.equal((await client().health()).status, "ok");
    assert.equal(srv.seen.length, 2);
  });

  test("ready() is not retried: its 503 is the answer", async () => {
    srv.reset();
    srv.script = () => refusal(503, "0");
    await assert.rejects(client().ready(), Unavailable);
    assert.equal(srv.seen.length, 1);
  });

  test("a call without a timeout waits for the policy's, looked up once", async () => {
    srv.reset();
    srv.policyTimeoutMs = 1000;
    srv.script = () => ({ status: 200, body: RESULT, delayMs: 600 });
    const c = client({ timeout: 0.2 });
    assert.equal((await c.execute("x")).exit_code, 0);
    assert.equal((await c.execute("x")).exit_code, 0);
    assert.deepEqual(srv.lookups.map((l) => l.url), ["/v1/policies/code-sandbox"]);
    // A call naming its own limit needs no lookup.
    srv.lookups = [];
    assert.equal((await client({ timeout: 0.2 }).execute("x", { timeout: 1 })).exit_code, 0);
    assert.deepEqual(srv.lookups, []);
    // Without the policy's timeout (an older daemon) the client's own applies.
    srv.policyTimeoutMs = undefined;
    await assert.rejects(client({ timeout: 0.2 }).execute("x"), RequestTimedOut);
  });

  test("JSON bodies are sent as application/json; uploads as octet-stream", async () => {
    srv.reset();
    srv.script = (req) => {
      if (req.url === "/v1/sessions") return { status: 201, body: { session_id: "s-1", policy: "code-sandbox" } };
      if (req.url === "/v1/batch") return { status: 200, body: { results: [RESULT] } };
      if (req.url.includes("/files")) return { status: 201, body: { path: "/tmp/f", size: 1 } };
      return { status: 200, body: RESULT };
    };
    const c = client();
    await c.execute("x");
    await c.batch(["x"]);
    const s = await c.session();
    await s.execute("x");
    for (const r of srv.seen) assert.equal(r.contentType, "application/json", r.url);
    await s.upload("/tmp/f", "x");
    assert.equal(srv.seen.at(-1)!.contentType, "application/octet-stream");
  });

  test("client.policy is the default policy's name; getPolicy() fetches one", async () => {
    const c = client({ policy: "python-strict" });
    assert.equal(c.policy, "python-strict");
    assert.equal(c.policyName, "python-strict");
    assert.equal(new SandboxClient({ policy: null }).policy, undefined);
    assert.equal((await c.getPolicy()).name, "python-strict");
  });
});

describe("a burst beyond the real daemon's queue", () => {
  let daemon: Daemon;
  before(async () => { daemon = await Daemon.start({}, { args: ["--max-concurrency", "1", "--queue", "1"] }); });
  after(async () => { await daemon?.stop(); });

  const burst = (c: SandboxClient, n: number) => Promise.all(Array.from({ length: n }, (_, i) =>
    c.execute(`import time; time.sleep(0.5); print(${i})`).then((r) => r.stdout, (e: unknown) => e)));

  test("without retries some are refused (429); with the defaults all run, once each", async () => {
    const refused = await burst(new SandboxClient({ baseUrl: daemon.url, retries: 0 }), 5);
    const limited = refused.filter((r) => r instanceof RateLimited) as RateLimited[];
    assert.ok(limited.length > 0, JSON.stringify(refused));
    assert.equal(limited[0].status, 429);
    assert.ok(limited[0].retryAfter !== undefined);
    assert.ok(refused.every((r) => typeof r === "string" || r instanceof RateLimited));

    const out = await burst(new SandboxClient({ baseUrl: daemon.url }), 6);
    assert.deepEqual(out, Array.from({ length: 6 }, (_, i) => `${i}\n`), out.map(String).join(" | "));
  });
});

describe("a policy timeout longer than the client's own, on the real daemon", () => {
  let daemon: Daemon;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "lsb-js-policies-"));
    const src = join(SOURCE_DIR, "policies");
    for (const f of readdirSync(src)) copyFileSync(join(src, f), join(dir, f));
    const text = readFileSync(join(src, "code-sandbox.yaml"), "utf8")
      .replace("name: code-sandbox", "name: long-runs").replace("timeout: 30", "timeout: 6");
    writeFileSync(join(dir, "long-runs.yaml"), text);
    daemon = await Daemon.start({}, { policies: dir });
  });
  after(async () => {
    await daemon?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("execute, a session and a batch get their result after the client's 1 s", async () => {
    const c = new SandboxClient({ baseUrl: daemon.url, policy: "long-runs", timeout: 1 });
    const code = "import time; time.sleep(2.5); print('finished')";
    assert.equal((await c.execute(code)).stdout, "finished\n");
    await c.withSession(async (s) => { assert.equal((await s.execute(code)).stdout, "finished\n"); });
    const [entry] = await c.batch([code]);
    assert.equal((entry as ExecResult).stdout, "finished\n");
  });

  test("the program that runs into the policy's timeout is a result, not a client timeout", async () => {
    const c = new SandboxClient({ baseUrl: daemon.url, policy: "long-runs", timeout: 1 });
    const r = await c.execute("while True: pass").catch((e: SandboxError) => e);
    assert.ok(!(r instanceof SandboxError), String(r));
    assert.equal((r as ExecResult).status, "timeout");
  });
});
