// Starts the REAL daemon for the E2B tests: `llm-sandbox serve` on a free loopback port with the
// repository's policies, two API tokens (two owners), and its audit log in a temp dir; points the
// E2B SDKs at it (the three variables of docs/e2b.md); stops it with SIGTERM.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const SOURCE_DIR = process.env.LSB_SOURCE_DIR ?? resolve(here, "..", "..");
const BUILD_DIR = process.env.LSB_BUILD_DIR ?? join(SOURCE_DIR, "build");
const BINARY = join(BUILD_DIR, "llm-sandbox");

export const TOKEN_A = "e2b-test-token-alice-0123456789";
export const TOKEN_B = "e2b-test-token-bob-9876543210";

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

export async function startDaemon() {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is not built (set LSB_BUILD_DIR)`);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "lsb-e2b-"));
  const logPath = join(dir, "serve.log");
  const auditPath = join(dir, "audit.jsonl");
  const log = createWriteStream(logPath);
  const env = { ...process.env, LLM_SANDBOX_TOKENS: `${TOKEN_A},${TOKEN_B}`, LLM_SANDBOX_STATE_DIR: dir };
  delete env.LLM_SANDBOX_AUDIT_LOG;
  const proc = spawn(BINARY, ["serve", "--listen", `127.0.0.1:${port}`, "--policies", join(SOURCE_DIR, "policies"),
    "--images", join(SOURCE_DIR, "config", "images.yaml"), "--audit-log", auditPath],
  { cwd: SOURCE_DIR, env, stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout.pipe(log, { end: false });
  proc.stderr.pipe(log, { end: false });
  const url = `http://127.0.0.1:${port}`;
  const readLog = () => (existsSync(logPath) ? readFileSync(logPath, "utf8") : "");
  const audit = () => (existsSync(auditPath) ? readFileSync(auditPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }
    log.end();
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`llm-sandbox serve exited ${proc.exitCode}:\n${readLog()}`);
    try {
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (r.status === 200) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`no /healthz answer within 60s:\n${readLog()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // The three variables a user sets to switch (docs/e2b.md).
  process.env.E2B_API_URL = url;
  process.env.E2B_SANDBOX_URL = url;
  process.env.E2B_API_KEY = TOKEN_A;
  return { url, stop, log: readLog, audit };
}
