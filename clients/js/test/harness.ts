/**
 * Starts the REAL daemon for a test file: `$LSB_BUILD_DIR/llm-sandbox serve --listen
 * 127.0.0.1:<free port> --policies <repo>/policies --images <repo>/config/images.yaml`, waits for
 * /healthz, and stops it with SIGTERM. Its log (in a temp directory, quoted by a failed start) is
 * removed when it stops. With $LSB_DAEMON_URL set, that daemon is used instead.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdtempSync, readFileSync, rmSync, createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const SOURCE_DIR = process.env.LSB_SOURCE_DIR ?? resolve(here, "..", "..", "..");
export const BUILD_DIR = process.env.LSB_BUILD_DIR ?? join(SOURCE_DIR, "build");
export const BINARY = join(BUILD_DIR, "llm-sandbox");

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

export class Daemon {
  private constructor(readonly url: string, private readonly proc?: ChildProcess,
                      private readonly logDir?: string, private readonly logDone?: Promise<void>) {}

  /**
   * Starts a daemon; `env` adds variables (e.g. LLM_SANDBOX_TOKENS), `opts.args` serve flags
   * (e.g. a tiny --queue), `opts.policies` another policy directory.
   */
  static async start(env: Record<string, string> = {},
                     opts: { args?: string[]; policies?: string } = {}): Promise<Daemon> {
    if (process.env.LSB_DAEMON_URL && Object.keys(env).length === 0 && !opts.args && !opts.policies) {
      return new Daemon(process.env.LSB_DAEMON_URL);
    }
    if (!existsSync(BINARY)) throw new Error(`${BINARY} is not built (set LSB_BUILD_DIR)`);
    const port = await freePort();
    // The log lives until stop(), which removes its directory; a failed start quotes it first.
    const logDir = mkdtempSync(join(tmpdir(), "lsb-js-"));
    const log = createWriteStream(join(logDir, "serve.log"));
    const logDone = new Promise<void>((r) => { log.once("close", r); log.once("error", () => r()); });
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    if (!("LLM_SANDBOX_TOKENS" in env)) delete childEnv.LLM_SANDBOX_TOKENS;
    // The default audit log goes to this daemon's temp dir, never the machine's default place.
    if (!("LLM_SANDBOX_STATE_DIR" in env)) childEnv.LLM_SANDBOX_STATE_DIR = logDir;
    delete childEnv.LLM_SANDBOX_AUDIT_LOG;
    const proc = spawn(BINARY, ["serve", "--listen", `127.0.0.1:${port}`,
      "--policies", opts.policies ?? join(SOURCE_DIR, "policies"),
      "--images", join(SOURCE_DIR, "config", "images.yaml"), ...(opts.args ?? [])],
      { cwd: SOURCE_DIR, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
    proc.stdout!.pipe(log, { end: false });
    proc.stderr!.pipe(log, { end: false });
    proc.once("close", () => log.end());  // both pipes drained
    const d = new Daemon(`http://127.0.0.1:${port}`, proc, logDir, logDone);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null) {
        await d.halt();
        const text = d.log();
        d.removeLog();
        throw new Error(`llm-sandbox serve exited ${proc.exitCode}:\n${text}`);
      }
      try {
        const r = await fetch(`${d.url}/healthz`, { signal: AbortSignal.timeout(2000) });
        if (r.status === 200) return d;
      } catch { /* not up yet */ }
      if (Date.now() > deadline) {
        await d.halt();
        const text = d.log();
        d.removeLog();
        throw new Error(`no /healthz answer within 60s:\n${text}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  log(): string {
    const path = this.logDir && join(this.logDir, "serve.log");
    return path && existsSync(path) ? readFileSync(path, "utf8") : "";
  }

  /** SIGTERM, then SIGKILL if it has not stopped within 30 s; then its log is removed. */
  async stop(): Promise<void> {
    await this.halt();
    this.removeLog();
  }

  /** Waits for the exit (SIGTERM, SIGKILL after 30 s) and for its output to be in the log. */
  private async halt(): Promise<void> {
    const p = this.proc;
    if (!p) return;
    if (p.exitCode === null && p.signalCode === null) {
      const exited = new Promise<void>((r) => p.once("exit", () => r()));
      p.kill("SIGTERM");
      const timer = setTimeout(() => p.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }
    // A box that outlived the daemon could hold its stdout open: wait for the log, but not forever.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.logDone, new Promise<void>((r) => { timer = setTimeout(r, 5_000); })]);
    clearTimeout(timer);
  }

  private removeLog(): void {
    if (this.logDir) rmSync(this.logDir, { recursive: true, force: true });
  }
}
