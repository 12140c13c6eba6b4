/**
 * Starts the REAL daemon for a test file: `$LSB_BUILD_DIR/llm-sandbox serve --listen
 * 127.0.0.1:<free port> --policies <repo>/policies --images <repo>/config/images.yaml`, waits for
 * /healthz, and stops it with SIGTERM. With $LSB_DAEMON_URL set, that daemon is used instead.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdtempSync, readFileSync, createWriteStream } from "node:fs";
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
                      private readonly logPath?: string) {}

  /** Starts a daemon; `env` adds variables (e.g. LLM_SANDBOX_TOKENS). */
  static async start(env: Record<string, string> = {}): Promise<Daemon> {
    if (process.env.LSB_DAEMON_URL && Object.keys(env).length === 0) return new Daemon(process.env.LSB_DAEMON_URL);
    if (!existsSync(BINARY)) throw new Error(`${BINARY} is not built (set LSB_BUILD_DIR)`);
    const port = await freePort();
    const logPath = join(mkdtempSync(join(tmpdir(), "lsb-js-")), "serve.log");
    const log = createWriteStream(logPath);
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    if (!("LLM_SANDBOX_TOKENS" in env)) delete childEnv.LLM_SANDBOX_TOKENS;
    const proc = spawn(BINARY, ["serve", "--listen", `127.0.0.1:${port}`,
      "--policies", join(SOURCE_DIR, "policies"), "--images", join(SOURCE_DIR, "config", "images.yaml")],
      { cwd: SOURCE_DIR, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
    proc.stdout!.pipe(log);
    proc.stderr!.pipe(log);
    const d = new Daemon(`http://127.0.0.1:${port}`, proc, logPath);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`llm-sandbox serve exited ${proc.exitCode}:\n${d.log()}`);
      try {
        const r = await fetch(`${d.url}/healthz`, { signal: AbortSignal.timeout(2000) });
        if (r.status === 200) return d;
      } catch { /* not up yet */ }
      if (Date.now() > deadline) {
        await d.stop();
        throw new Error(`no /healthz answer within 60s:\n${d.log()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  log(): string {
    return this.logPath && existsSync(this.logPath) ? readFileSync(this.logPath, "utf8") : "";
  }

  /** SIGTERM, then SIGKILL if it has not stopped within 30 s. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    p.kill("SIGTERM");
    const timer = setTimeout(() => p.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }
}
