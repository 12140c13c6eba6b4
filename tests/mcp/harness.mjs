// Starts the REAL daemon for the /mcp tests (`$LSB_BUILD_DIR/llm-sandbox serve` on a free port with
// the repository's policies and image map), waits for /healthz, stops it with SIGTERM; and the
// arguments that start `llm-sandbox mcp` the same way for the stdio tests. The daemon's log (in a
// temp directory, quoted by a failed start) is removed when it stops.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const SOURCE_DIR = process.env.LSB_SOURCE_DIR ?? resolve(here, "..", "..");
export const BUILD_DIR = process.env.LSB_BUILD_DIR ?? join(SOURCE_DIR, "build");
export const BINARY = join(BUILD_DIR, "llm-sandbox");
export const POLICY_ARGS = ["--policies", join(SOURCE_DIR, "policies"), "--images", join(SOURCE_DIR, "config", "images.yaml")];

async function freePort() {
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
  // The log lives until stop(), which removes its directory; a failed start quotes it first.
  const logDir = mkdtempSync(join(tmpdir(), "lsb-mcp-"));
  const logPath = join(logDir, "serve.log");
  const log = createWriteStream(logPath);
  const logDone = new Promise((r) => { log.once("close", r); log.once("error", () => r()); });
  const env = { ...process.env };
  delete env.LLM_SANDBOX_TOKENS;
  // The default audit log goes to this daemon's temp dir, never the machine's default place.
  env.LLM_SANDBOX_STATE_DIR = logDir;
  delete env.LLM_SANDBOX_AUDIT_LOG;
  const proc = spawn(BINARY, ["serve", "--listen", `127.0.0.1:${port}`, ...POLICY_ARGS],
    { cwd: SOURCE_DIR, env, stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout.pipe(log, { end: false });
  proc.stderr.pipe(log, { end: false });
  proc.once("close", () => log.end());  // both pipes drained
  const url = `http://127.0.0.1:${port}`;
  const readLog = () => (existsSync(logPath) ? readFileSync(logPath, "utf8") : "");
  // Waits for the exit (SIGTERM, SIGKILL after 30 s) and for the output to be in the log.
  const halt = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }
    // A box that outlived the daemon could hold its stdout open: wait for the log, but not forever.
    let timer;
    await Promise.race([logDone, new Promise((r) => { timer = setTimeout(r, 5_000); })]);
    clearTimeout(timer);
  };
  const removeLog = () => rmSync(logDir, { recursive: true, force: true });
  const stop = async () => {
    await halt();
    removeLog();
  };
  const fail = async (what) => {
    await halt();
    const text = readLog();
    removeLog();
    throw new Error(`${what}:\n${text}`);
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) await fail(`llm-sandbox serve exited ${proc.exitCode}`);
    try {
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (r.status === 200) return { url, stop, log: readLog };
    } catch { /* not up yet */ }
    if (Date.now() > deadline) await fail("no /healthz answer within 60s");
    await new Promise((r) => setTimeout(r, 100));
  }
}
