/**
 * A session: one sandbox kept for several executions (the requirements' "sub-agent").
 *
 * Files under the policy's tmpfs survive between executions and, with language python, the
 * interpreter keeps its variables. A session holds a box on the daemon until it is closed or its
 * idle timeout passes: close it in a `finally`, or use `client.withSession(fn)`.
 */
import { fileQuery, httpTimeoutMs, segment } from "./body.js";
import { NotFound } from "./errors.js";
import { readBytes, type Transport } from "./http.js";
import type { PolicyTimeouts } from "./timeouts.js";
import { follow, type StreamedEvent } from "./events.js";
import type {
  ChangeSet, ExecResult, ForkReport, FsEntry, FsListing, PauseInfo, SessionExecuteOptions, SessionInfo,
  SessionResetInfo, SessionResumeInfo,
} from "./types.js";
import { packDir, unpackTar } from "./workspace.js";

/** What fork() returns: the children (an array, in order) with the daemon's report. */
export type ForkedSessions = Session[] & { report: ForkReport };

/** The answer of PUT /v1/sessions/{id}/archive. */
export interface ArchiveWritten { path: string; format: string; files: number; dirs: number; bytes: number }

export class Session {
  /** Set once close() succeeded (or found the session already gone). */
  closed = false;

  constructor(private readonly transport: Transport, private readonly baseTimeoutS: number,
              private infoCache: SessionInfo, private readonly policyTimeouts?: PolicyTimeouts) {}

  get id(): string { return this.infoCache.session_id; }
  get policy(): string { return this.infoCache.policy; }
  get language(): string { return this.infoCache.language; }

  private get base(): string { return `/v1/sessions/${segment(this.id)}`; }

  /**
   * Runs code (a string) or a command (an array: program and arguments) in this session's box.
   * Throws Conflict while another execution is running.
   */
  async execute(code: string | string[], opts: SessionExecuteOptions = {}): Promise<ExecResult> {
    const body: Record<string, unknown> = Array.isArray(code) ? { command: [...code] } : { code };
    if (opts.collect !== undefined) body.collect = [...opts.collect];
    if (opts.stdin !== undefined) body.stdin = opts.stdin;
    if (opts.timeout !== undefined) body.timeout = opts.timeout;
    if (opts.env !== undefined) body.env = opts.env;
    // The program runs under the session's policy: wait for its timeout when the call names none.
    const limit = opts.timeout ?? await this.policyTimeouts?.seconds(this.policy);
    return this.transport.json<ExecResult>({
      method: "POST", path: `${this.base}/execute`, json: body, signal: opts.signal,
      timeoutMs: httpTimeoutMs(this.baseTimeoutS, limit),
    });
  }

  /**
   * Writes a file into the box (strings as UTF-8); returns `{path, size}`. The path must be
   * absolute and inside one of the policy's tmpfs mounts, e.g. /tmp/x.
   */
  upload(path: string, data: string | Uint8Array): Promise<{ path: string; size: number }> {
    const raw = typeof data === "string" ? new TextEncoder().encode(data) : data;
    return this.transport.json({
      method: "PUT", path: `${this.base}/files?path=${fileQuery(path)}`, raw,
      timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
  }

  /** Reads a file from the box, byte for byte. Throws NotFound when it is absent. */
  async download(path: string): Promise<Uint8Array> {
    const req = {
      method: "GET" as const, path: `${this.base}/files?path=${fileQuery(path)}`,
      accept: "application/octet-stream", timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    };
    return readBytes(await this.transport.send(req), req);
  }

  /**
   * Sends the directory `local` into the box under `remote` (e.g. /tmp/work) as one tar.gz;
   * `ignore`: glob patterns of names left out (default: .git, node_modules, __pycache__, ...).
   */
  uploadDir(local: string, remote: string, opts: { ignore?: readonly string[] } = {}): Promise<ArchiveWritten> {
    return this.uploadArchive(remote, packDir(local, opts.ignore));
  }

  /** Unpacks a tar, tar.gz, tar.zst or zip in the box under `remote`. */
  uploadArchive(remote: string, archive: Uint8Array): Promise<ArchiveWritten> {
    return this.transport.json({
      method: "PUT", path: `${this.base}/archive?path=${fileQuery(remote)}`, raw: archive,
      timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
  }

  /** Fetches the directory `remote` of the box into `local`; returns the files written. */
  async downloadDir(remote: string, local: string): Promise<string[]> {
    const req = {
      method: "GET" as const, path: `${this.base}/archive?path=${fileQuery(remote)}`,
      accept: "application/x-tar", timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    };
    return unpackTar(await readBytes(await this.transport.send(req), req), local);
  }

  /** Reads a file and decodes it as UTF-8. */
  async downloadText(path: string): Promise<string> {
    return new TextDecoder().decode(await this.download(path));
  }

  /**
   * A directory's entries by name, at most `limit` (1-2000), carried out in the box by init for
   * any language; a link is described, never followed.
   */
  listDir(path: string, opts: { limit?: number } = {}): Promise<FsListing> {
    const limit = opts.limit !== undefined ? `&limit=${opts.limit}` : "";
    return this.transport.json({
      method: "GET", path: `${this.base}/fs/list?path=${fileQuery(path)}${limit}`,
      timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
  }

  /** One entry (a link described, not followed). Throws NotFound when absent. */
  stat(path: string): Promise<FsEntry> {
    return this.transport.json({
      method: "GET", path: `${this.base}/fs/stat?path=${fileQuery(path)}`, timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
  }

  /** Makes a directory inside the policy's writable dirs (`parents`: like mkdir -p). */
  mkdir(path: string, opts: { parents?: boolean } = {}): Promise<{ path: string }> {
    return this.fsCall("mkdir", { path, parents: opts.parents ?? false });
  }

  /** Renames (moves) `from` to `to`, both inside the policy's writable dirs. */
  rename(from: string, to: string): Promise<{ from: string; to: string }> {
    return this.fsCall("rename", { from, to });
  }

  /** Removes a file, a link, or a directory (empty, or with `recursive`). */
  remove(path: string, opts: { recursive?: boolean } = {}): Promise<{ path: string; removed: boolean }> {
    return this.fsCall("remove", { path, recursive: opts.recursive ?? false });
  }

  /**
   * What changed under `path` (default: every writable dir) since the session was created, as a
   * change set whose `patch` applies with `git apply`. The session must be created with
   * `changes: true`; `ignore` replaces the default (__pycache__, *.pyc, .pytest_cache).
   */
  changes(path?: string, opts: { ignore?: readonly string[] } = {}): Promise<ChangeSet> {
    const q: string[] = [];
    if (path !== undefined) q.push(`path=${fileQuery(path)}`);
    if (opts.ignore !== undefined) q.push(`ignore=${encodeURIComponent(opts.ignore.join(","))}`);
    return this.transport.json({
      method: "GET", path: `${this.base}/changes${q.length ? "?" + q.join("&") : ""}`,
      timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
  }

  private fsCall<T>(op: string, body: Record<string, unknown>): Promise<T> {
    return this.transport.json<T>({
      method: "POST", path: `${this.base}/fs/${op}`, json: body, timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
  }

  /**
   * Returns the session to its state right after creation (or the last snapshot()): a fresh
   * interpreter with the setup's imports, the tmpfs files put back, no process of the episode
   * left. Throws Conflict while an execution runs.
   */
  async reset(): Promise<SessionResetInfo> {
    const info = await this.transport.json<SessionResetInfo>({
      method: "POST", path: `${this.base}/reset`, json: {}, timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
    this.infoCache = info;
    return info;
  }

  /** Makes the state now (variables, imports, tmpfs files) the one reset() returns to (python). */
  async snapshot(): Promise<SessionInfo> {
    this.infoCache = await this.transport.json<SessionInfo>({
      method: "POST", path: `${this.base}/snapshot`, json: {}, timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
    return this.infoCache;
  }

  /**
   * New sessions, each in its own box, starting with this session's globals (those that pickle),
   * imported modules and tmpfs files; no process is carried. The array's `report` is the
   * daemon's account of what was and was not carried (docs/api.md "Fork").
   */
  async fork(count = 1): Promise<ForkedSessions> {
    const answer = await this.transport.json<{ sessions: SessionInfo[]; fork: ForkReport }>({
      method: "POST", path: `${this.base}/fork`, json: { count },
      // Each child costs a create; they open concurrently, but leave room for several waves.
      timeoutMs: Math.max(httpTimeoutMs(this.baseTimeoutS), 60_000),
    });
    const children = answer.sessions.map((info) =>
      new Session(this.transport, this.baseTimeoutS, info, this.policyTimeouts));
    return Object.assign(children, { report: answer.fork });
  }

  /**
   * Saves the session's state (the globals that pickle, its modules, its writable files) in the
   * daemon and ends its box, freeing its memory; the id stays. Python sessions only. resume()
   * (or client.resumeSession(id), also after a restart) brings it back; processes never survive.
   */
  async pause(): Promise<PauseInfo> {
    const answer = await this.transport.json<PauseInfo>({
      method: "POST", path: `${this.base}/pause`, json: {},
      timeoutMs: Math.max(httpTimeoutMs(this.baseTimeoutS), 15_000),
    });
    this.infoCache = { ...this.infoCache, state: "paused" };
    return answer;
  }

  /** Rebuilds a paused session, same id, in a new box; `resume` says what was carried. */
  async resume(): Promise<SessionResumeInfo> {
    const info = await this.transport.json<SessionResumeInfo>({
      method: "POST", path: `${this.base}/resume`, json: {},
      timeoutMs: Math.max(httpTimeoutMs(this.baseTimeoutS), 30_000),
    });
    this.infoCache = info;
    return info;
  }

  /**
   * Follows changes under `path` in the box (`for await (const {event, data} of s.watch("/tmp"))`);
   * leaving the loop or aborting `signal` closes the connection.
   */
  watch(path: string, opts: { recursive?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<StreamedEvent> {
    const q = `path=${fileQuery(path)}` + (opts.recursive ? "&recursive=true" : "");
    return follow(this.transport, `${this.base}/fs/watch?${q}`, opts.signal);
  }

  /** The session's current state (executions, state, expires_at...). */
  async info(): Promise<SessionInfo> {
    this.infoCache = await this.transport.json<SessionInfo>({
      method: "GET", path: this.base, timeoutMs: httpTimeoutMs(this.baseTimeoutS),
    });
    return this.infoCache;
  }

  /** Deletes the session and its box. Idempotent: an expired session counts as closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      const resp = await this.transport.send({
        method: "DELETE", path: this.base, timeoutMs: httpTimeoutMs(this.baseTimeoutS),
      });
      await resp.arrayBuffer().catch(() => undefined);
    } catch (err) {
      if (!(err instanceof NotFound)) throw err;
    }
    this.closed = true;
  }
}
