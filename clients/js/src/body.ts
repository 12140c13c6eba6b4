/**
 * Request bodies and HTTP deadlines, with no I/O: what each operation sends. Kept apart from the
 * client so the rules (unset options are left out, bytes travel as base64, how long to wait for
 * a batch) are in one place, as in the Python client's _calls module.
 */
import type { BatchTask, ExecuteOptions, ExecuteRequest, FileEntry, FilesArg } from "./types.js";

/**
 * Extra seconds of HTTP patience beyond the sandbox's own timeout: the daemon needs time to
 * start a box and to collect the result after the program was killed at its deadline.
 */
export const TIMEOUT_MARGIN_S = 15;

/**
 * Milliseconds to wait for an answer to a call that may run a program for `sandboxTimeout` s
 * (the call's own timeout, else its policy's): at least the client's timeout, and the program's
 * limit plus the margin.
 */
export function httpTimeoutMs(baseS: number, sandboxTimeout?: number): number {
  const s = sandboxTimeout === undefined ? baseS : Math.max(baseS, sandboxTimeout + TIMEOUT_MARGIN_S);
  return Math.round(s * 1000);
}

function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** `{path: content}` or the list form -> the API's list; bytes as base64 so they arrive exactly. */
export function encodeFiles(files: FilesArg | undefined): FileEntry[] | undefined {
  if (files === undefined) return undefined;
  if (Array.isArray(files)) {
    return files.map((f) => {
      if (typeof f !== "object" || f === null || typeof f.path !== "string") {
        throw new TypeError("files must be {path: content} or a list of {path, content | content_base64 | archive_base64}");
      }
      if ("archive_base64" in f) return { path: f.path, archive_base64: String(f.archive_base64) };
      return "content_base64" in f ? { path: f.path, content_base64: String(f.content_base64) }
        : { path: f.path, content: String((f as { content?: unknown }).content ?? "") };
    });
  }
  return Object.entries(files).map(([path, content]) =>
    typeof content === "string" ? { path, content } : { path, content_base64: toBase64(content) });
}

/** The POST /v1/execute body; unset options are left out so the policy's values apply. */
export function executeBody(code: string | string[], opts: ExecuteOptions, defaultPolicy?: string): ExecuteRequest {
  // A string is code; an array of strings is a command run as it is.
  if (Array.isArray(code)) {
    if (!code.every((a) => typeof a === "string")) throw new TypeError("a command is an array of strings");
  } else if (typeof code !== "string") {
    throw new TypeError(`code must be a string, not ${typeof code}`);
  }
  const body: ExecuteRequest = Array.isArray(code) ? { command: [...code] } : { code };
  if (opts.collect !== undefined) body.collect = [...opts.collect];
  const policy = opts.policy ?? defaultPolicy;
  if (opts.language !== undefined) body.language = opts.language;
  if (policy !== undefined) body.policy = policy;
  if (opts.stdin !== undefined) body.stdin = opts.stdin;
  if (opts.timeout !== undefined) body.timeout = opts.timeout;
  if (opts.memory !== undefined) body.memory = opts.memory;
  if (opts.cpu !== undefined) body.cpu = opts.cpu;
  if (opts.env !== undefined) body.env = Object.fromEntries(Object.entries(opts.env).map(([k, v]) => [k, String(v)]));
  const files = encodeFiles(opts.files);
  if (files !== undefined) body.files = files;
  return body;
}

/** The POST /v1/batch tasks, with the client's default policy where a task names none. */
export function batchTasks(tasks: readonly BatchTask[], defaultPolicy?: string): ExecuteRequest[] {
  return tasks.map((t) => {
    if (typeof t === "string") return executeBody(t, {}, defaultPolicy);
    if (typeof t !== "object" || t === null || (typeof t.code !== "string") === !Array.isArray(t.command)) {
      throw new TypeError("a batch task is code (string) or an object with a string 'code' or an array 'command'");
    }
    const { files, ...rest } = t;
    const out: ExecuteRequest = { ...rest };
    if (out.policy === undefined && defaultPolicy !== undefined) out.policy = defaultPolicy;
    const encoded = encodeFiles(files);
    if (encoded !== undefined) out.files = encoded;
    return out;
  });
}

/**
 * A batch answers once every task is done: give the wait room for the waves of tasks.
 * `policyTimeouts` maps a task's policy to its limit, for tasks that name no timeout.
 */
export function batchTimeoutMs(tasks: readonly ExecuteRequest[], baseS: number, concurrency?: number,
                               policyTimeouts: ReadonlyMap<string | undefined, number | undefined> = new Map()): number {
  const longest = Math.max(baseS, ...tasks.map((t) => t.timeout ?? policyTimeouts.get(t.policy) ?? baseS));
  const waves = tasks.length ? Math.ceil(tasks.length / Math.max(1, concurrency ?? 4)) : 1;
  return Math.round(Math.max(baseS, waves * (longest + TIMEOUT_MARGIN_S)) * 1000);
}

/** Percent-encodes a path segment or a file path for the query string (keeping "/"). */
export function segment(s: string): string {
  return encodeURIComponent(s);
}

export function fileQuery(path: string): string {
  return encodeURIComponent(path).replace(/%2F/g, "/");
}
