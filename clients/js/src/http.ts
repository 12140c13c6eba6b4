/**
 * The HTTP transport: one request to the daemon over Node's built-in fetch, with the bearer
 * token, an overall deadline, retries of 429/503 (on by default), and every failure turned into a
 * typed SandboxError (never a bare TypeError("fetch failed")).
 */
import {
  ConnectionFailed, ProtocolError, RateLimited, RequestTimedOut, SandboxError, Unavailable, errorFromResponse,
  refusedBeforeRunning,
} from "./errors.js";
import { VERSION } from "./version.js";

export const USER_AGENT = `llm-sandbox-js/${VERSION}`;

/** Defaults of the retry rule (ClientOptions.retries, maxRetryWait, retryBudget). */
export const DEFAULT_RETRIES = 10;
export const DEFAULT_MAX_RETRY_WAIT_S = 30;
export const DEFAULT_RETRY_BUDGET_S = 30;

/** Methods whose repetition is harmless whatever answered; a POST is retried only on the daemon's own refusal. */
const IDEMPOTENT = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

/**
 * Retries of 429/503 answers, on by default so a burst of sub-agents beyond the daemon's queue
 * waits its turn instead of failing. A 429/503 from the daemon means it refused before running
 * anything, so sending the request again cannot run code twice. Each wait is the Retry-After
 * (else `backoff` doubled per attempt) plus up to 20% jitter; retrying never comes back sooner
 * than asked: a Retry-After above `maxWait`, or above what is left of `budget` (all waits of one
 * call together), ends the retries and throws the error, whose `retryAfter` says when to come back.
 */
export interface RetryRule {
  /** At most this many retries; 0 turns retrying off. */
  retries: number;
  /** Upper bound of one wait, seconds. */
  maxWait: number;
  /** Upper bound of all waits of one call together, seconds. */
  budget: number;
  /** First wait when the answer has no Retry-After, doubled per attempt. */
  backoff: number;
}

/** Seconds to wait before retry number `attempt` (1-based), or undefined to give up. */
export function retryDelay(rule: RetryRule, attempt: number, err: unknown, method: string, waited: number): number | undefined {
  if (attempt > rule.retries) return undefined;
  if (!(err instanceof RateLimited || err instanceof Unavailable)) return undefined;
  if (!IDEMPOTENT.has(method.toUpperCase()) && !refusedBeforeRunning(err)) return undefined;
  const asked = err.retryAfter ?? rule.backoff * 2 ** (attempt - 1);
  if (asked > rule.maxWait || waited + asked > rule.budget) return undefined;
  return Math.min(asked * (1 + Math.random() * 0.2), rule.budget - waited);
}

export interface HttpRequest {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Path and query, starting with "/". */
  path: string;
  json?: unknown;
  raw?: Uint8Array;
  accept?: string;
  /** Milliseconds until the whole exchange is abandoned (RequestTimedOut). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** false for a call whose 503 is the answer itself (GET /readyz). */
  retry?: boolean;
}

export class Transport {
  readonly baseUrl: string;

  constructor(baseUrl: string, private readonly token: string | undefined,
              private readonly retry: RetryRule) {
    const withScheme = baseUrl.includes("://") ? baseUrl : `http://${baseUrl}`;
    const url = new URL(withScheme);
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new TypeError(`baseUrl must be http:// or https://, got ${baseUrl}`);
    }
    // A path prefix is kept: the daemon may sit behind a reverse proxy under /sandbox/.
    this.baseUrl = withScheme.replace(/\/+$/, "");
  }

  /** Sends the request and returns the 2xx response; throws the typed error otherwise. */
  async send(req: HttpRequest): Promise<Response> {
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(req);
      } catch (err) {
        const wait = req.retry === false ? undefined : retryDelay(this.retry, attempt, err, req.method, waited);
        if (wait === undefined) throw err;
        await sleep(wait * 1000, req.signal);
        waited += wait;
      }
    }
  }

  /** Sends and decodes a JSON answer. */
  async json<T>(req: HttpRequest): Promise<T> {
    const resp = await this.send(req);
    const text = await readText(resp, req);
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new ProtocolError(
        `the daemon answered ${resp.status} with a body that is not JSON (${String(e)}): ${text.slice(0, 200)}`,
        { status: resp.status });
    }
  }

  private async once(req: HttpRequest): Promise<Response> {
    const url = this.baseUrl + req.path;
    const headers: Record<string, string> = {
      "User-Agent": USER_AGENT,
      Accept: req.accept ?? "application/json",
    };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    if (req.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(req.json);
    } else if (req.raw !== undefined) {
      headers["Content-Type"] = "application/octet-stream";
      // A fresh ArrayBuffer-backed copy: fetch's BodyInit does not take a view on a shared buffer.
      body = new Uint8Array(req.raw);
    }
    const deadline = AbortSignal.timeout(req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
    let resp: Response;
    try {
      resp = await fetch(url, { method: req.method, headers, body, signal });
    } catch (err) {
      throw transportError(err, url, req, deadline);
    }
    if (resp.status >= 200 && resp.status < 300) return resp;
    const bytes = new Uint8Array(await resp.arrayBuffer().catch(() => new ArrayBuffer(0)));
    throw errorFromResponse(resp.status, resp.headers, bytes, url);
  }
}

/** Reads a body as text; a deadline hit while reading is a RequestTimedOut too. */
export async function readText(resp: Response, req: HttpRequest): Promise<string> {
  try {
    return await resp.text();
  } catch (err) {
    throw transportError(err, resp.url, req);
  }
}

export async function readBytes(resp: Response, req: HttpRequest): Promise<Uint8Array> {
  try {
    return new Uint8Array(await resp.arrayBuffer());
  } catch (err) {
    throw transportError(err, resp.url, req);
  }
}

/** Names the failure so the caller (often an LLM reading a tool's output) knows what to do. */
export function transportError(err: unknown, url: string, req: HttpRequest,
                               deadline?: AbortSignal): SandboxError {
  if (err instanceof SandboxError) return err;
  const name = (err as { name?: string } | null)?.name;
  if (name === "TimeoutError" || (deadline?.aborted && name === "AbortError")) {
    return new RequestTimedOut(
      `no answer from ${url} within ${(req.timeoutMs / 1000).toFixed(1)}s; the daemon may still be running the code`,
      { cause: err });
  }
  if (name === "AbortError") {
    return new SandboxError(`request to ${url} was aborted by the caller`, { code: "aborted", cause: err });
  }
  const cause = (err as { cause?: { code?: string; message?: string } } | null)?.cause;
  const detail = cause?.code ?? cause?.message ?? String(err);
  return new ConnectionFailed(
    `cannot reach the LLM Sandbox daemon at ${url} (${detail}); is \`llm-sandbox serve\` running there?`,
    { cause: err });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal?.reason); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
