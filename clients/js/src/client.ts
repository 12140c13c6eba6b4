/**
 * SandboxClient: the TypeScript client of the LLM Sandbox daemon (docs/api.md), with the same
 * surface as the Python client:
 *
 *   const client = new SandboxClient({ baseUrl: "http://localhost:8080", policy: "code-sandbox" });
 *   const result = await client.execute("print(6 * 7)");
 *   console.log(result.stdout);
 */
import { batchTasks, batchTimeoutMs, executeBody, httpTimeoutMs, segment } from "./body.js";
import { ProtocolError, RequestTimedOut, errorFromBody } from "./errors.js";
import { fromBase64 } from "./output.js";
import {
  DEFAULT_MAX_RETRY_WAIT_S, DEFAULT_RETRIES, DEFAULT_RETRY_BUDGET_S, Transport,
} from "./http.js";
import { ExecutionHandle } from "./handle.js";
import { follow, sseData, sseMessages, type StreamedEvent } from "./events.js";
import { Session } from "./session.js";
import type { SSEMessage } from "./sse.js";
import { PolicyTimeouts } from "./timeouts.js";
import type {
  BatchEntry, BatchTask, ExecResult, ExecuteOptions, ExecutionFilter, ExecutionState, ExecutionsView, HistoryPage,
  PolicyDetail, PolicySummary, SessionInfo, SessionOptions, SessionResumeInfo, StreamEvent,
} from "./types.js";

export const DEFAULT_URL = "http://localhost:8080";
export const DEFAULT_POLICY = "code-sandbox";

export interface ClientOptions {
  /** The daemon's address (default http://localhost:8080). */
  baseUrl?: string;
  /**
   * The server-side policy used when a call names none (default "code-sandbox"; null = the
   * daemon's default). A request may only tighten it; asking for more throws Forbidden.
   */
  policy?: string | null;
  /** Bearer token; defaults to $LLM_SANDBOX_TOKEN. Needed when the daemon has tokens. */
  token?: string;
  /**
   * Seconds to wait for the daemon's answer at least (default 60). A call that runs a program
   * waits at least its limit (the call's `timeout`, else the policy's, learned once from GET
   * /v1/policies/{name}) plus 15 s, so the daemon's deadline always fires first and the result is
   * not lost.
   */
  timeout?: number;
  /**
   * How often a 429/503 answer (queue full, not ready) is retried, waiting its Retry-After each
   * time (default 10; 0 = never). Only refusals the daemon made before running anything are
   * retried, so no code runs twice.
   */
  retries?: number;
  /** Upper bound of one wait between retries, seconds (default 30). */
  maxRetryWait?: number;
  /** Upper bound of all waits of one call together, seconds (default 30). */
  retryBudget?: number;
}

export class SandboxClient {
  readonly baseUrl: string;
  /** The policy used when a call names none (undefined: the daemon's default). */
  readonly policy: string | undefined;
  /** Seconds; see ClientOptions.timeout. */
  readonly timeout: number;
  private readonly transport: Transport;
  private readonly policyTimeouts: PolicyTimeouts;

  constructor(opts: ClientOptions = {}) {
    const env = typeof process !== "undefined" ? process.env : {};
    this.policy = opts.policy === null ? undefined : (opts.policy ?? DEFAULT_POLICY);
    this.timeout = opts.timeout ?? 60;
    this.transport = new Transport(opts.baseUrl ?? DEFAULT_URL, opts.token ?? (env.LLM_SANDBOX_TOKEN || undefined), {
      retries: Math.max(0, Math.trunc(opts.retries ?? DEFAULT_RETRIES)),
      maxWait: opts.maxRetryWait ?? DEFAULT_MAX_RETRY_WAIT_S,
      budget: opts.retryBudget ?? DEFAULT_RETRY_BUDGET_S,
      backoff: 0.5,
    });
    this.baseUrl = this.transport.baseUrl;
    this.policyTimeouts = new PolicyTimeouts(this.transport, () => httpTimeoutMs(this.timeout));
  }

  /** @deprecated The same as `policy` (its first name). */
  get policyName(): string | undefined { return this.policy; }

  // --- executions

  /**
   * Runs code in a fresh sandbox. A program that fails, times out or is denied is still a
   * result (look at `status`); errors are thrown for requests the daemon refused or could not
   * serve.
   */
  async execute(code: string | string[], opts: ExecuteOptions = {}): Promise<ExecResult> {
    // One request that waits for the result (the policy's timeout bounds the wait). For a run
    // whose result must survive a dropped connection, use submit() and handle.result().
    const body = executeBody(code, opts, this.policy);
    const limit = body.timeout ?? await this.policyTimeouts.seconds(body.policy);
    return this.transport.json<ExecResult>({
      method: "POST", path: "/v1/execute", json: body, signal: opts.signal,
      timeoutMs: httpTimeoutMs(this.timeout, limit),
    });
  }

  /**
   * Queues code like execute() (refusals such as 400/403 are thrown here) and returns a handle at
   * once: `await handle.result(timeout)` is the ExecResult, `handle.id` names it to execution().
   */
  async submit(code: string | string[], opts: ExecuteOptions = {}): Promise<ExecutionHandle<ExecResult>> {
    const body = { ...executeBody(code, opts, this.policy), async: true };
    return this.execution<ExecResult>(await this.acceptedId(await this.transport.json<{ execution_id?: unknown }>({
      method: "POST", path: "/v1/execute", json: body, signal: opts.signal, timeoutMs: httpTimeoutMs(this.timeout),
    })));
  }

  /** Queues a batch (see batch()); the handle's result is its whole answer {results, concurrency}. */
  async submitBatch(tasks: readonly BatchTask[], opts: { concurrency?: number; policy?: string } = {}):
      Promise<ExecutionHandle<{ results: BatchEntry[]; concurrency: unknown }>> {
    const body: Record<string, unknown> = { tasks: batchTasks(tasks, opts.policy ?? this.policy), async: true };
    if (opts.concurrency !== undefined) body.concurrency = opts.concurrency;
    return this.execution(await this.acceptedId(await this.transport.json<{ execution_id?: unknown }>({
      method: "POST", path: "/v1/batch", json: body, timeoutMs: httpTimeoutMs(this.timeout),
    })));
  }

  /** A handle of an asynchronous execution by its id (e.g. one submitted by another process). */
  execution<R = ExecResult>(executionId: string): ExecutionHandle<R> {
    return new ExecutionHandle<R>(executionId, (wait) => this.transport.json<ExecutionState>({
      method: "GET",
      path: `/v1/executions/${segment(executionId)}` + (wait > 0 ? `?wait=${wait.toFixed(3)}` : ""),
      timeoutMs: httpTimeoutMs(this.timeout) + wait * 1000,
    }));
  }

  private acceptedId(answer: { execution_id?: unknown }): string {
    if (typeof answer?.execution_id !== "string") {
      throw new ProtocolError(`async answer without an execution_id: ${JSON.stringify(answer).slice(0, 200)}`);
    }
    return answer.execution_id;
  }

  /**
   * Queues code like execute() and returns a handle at once, as submit() does (it returned the
   * bare id at first: `handle.id` is that id, `String(handle)` too, and getExecution() /
   * waitExecution() take the handle or the id). The daemon keeps the result (bounded, docs/api.md).
   */
  executeAsync(code: string, opts: ExecuteOptions = {}): Promise<ExecutionHandle<ExecResult>> {
    return this.submit(code, opts);
  }

  /**
   * An execution's state: `state` queued | running | finished, `result` once finished, `error`
   * when the daemon could not run it. Throws NotFound once it is no longer kept (or is another
   * token's).
   */
  getExecution(execution: string | ExecutionHandle): Promise<ExecutionState> {
    return this.transport.json<ExecutionState>({
      method: "GET", path: `/v1/executions/${segment(String(execution))}`, timeoutMs: httpTimeoutMs(this.timeout),
    });
  }

  /**
   * Waits for an asynchronous execution and returns its result (a failed one throws its typed
   * error). `timeout`: seconds to wait at most (default: until it finishes); past it
   * RequestTimedOut, and the execution is still kept for a later call.
   */
  async waitExecution(execution: string | ExecutionHandle, opts: { timeout?: number; pollInterval?: number } = {}):
      Promise<ExecResult> {
    const executionId = String(execution);
    const deadline = opts.timeout === undefined ? undefined : Date.now() + opts.timeout * 1000;
    for (;;) {
      const view = await this.getExecution(executionId);
      if (view?.state === "finished") {
        if (view.error) throw errorFromBody(view);
        if (!view.result) throw new ProtocolError(`a finished execution without a result: ${JSON.stringify(view).slice(0, 200)}`);
        return view.result;
      }
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new RequestTimedOut(`execution ${executionId} did not finish within ${opts.timeout} s; ` +
          "it is still kept: call waitExecution again later");
      }
      await new Promise((r) => setTimeout(r, (opts.pollInterval ?? 0.25) * 1000));
    }
  }

  /**
   * Runs code like execute() but yields events as they happen: stdout/stderr chunks, alerts,
   * and last the result. An "error" event is thrown as its typed error. Leaving the loop early
   * (`break`) closes the connection, and the daemon stops the program.
   */
  async *stream(code: string, opts: ExecuteOptions = {}): AsyncGenerator<StreamEvent, void, undefined> {
    const body = executeBody(code, opts, this.policy);
    const limit = body.timeout ?? await this.policyTimeouts.seconds(body.policy);
    const req = {
      method: "POST" as const, path: "/v1/execute?stream=true", json: body, signal: opts.signal,
      accept: "text/event-stream", timeoutMs: httpTimeoutMs(this.timeout, limit),
    };
    let gotResult = false;
    for await (const m of sseMessages(this.transport, req)) {
      const ev = decodeEvent(m);
      gotResult ||= ev.kind === "result";
      yield ev;
    }
    if (!gotResult) throw new ProtocolError("the event stream ended without a result event");
  }

  /**
   * Runs many tasks concurrently, each in a fresh sandbox (sub-agents without state). Returns
   * one entry per task, in request order: a result, or `{error}` for a refused task; with
   * `raiseOnError` the first such entry is thrown as its typed error instead.
   */
  async batch(tasks: readonly BatchTask[], opts: { concurrency?: number; policy?: string; raiseOnError?: boolean } = {}): Promise<BatchEntry[]> {
    const encoded = batchTasks(tasks, opts.policy ?? this.policy);
    const body: Record<string, unknown> = { tasks: encoded };
    if (opts.concurrency !== undefined) body.concurrency = Math.trunc(opts.concurrency);
    const limits = new Map<string | undefined, number | undefined>();
    for (const t of encoded) {
      if (t.timeout === undefined && !limits.has(t.policy)) limits.set(t.policy, await this.policyTimeouts.seconds(t.policy));
    }
    const answer = await this.transport.json<{ results?: BatchEntry[] }>({
      method: "POST", path: "/v1/batch", json: body,
      timeoutMs: batchTimeoutMs(encoded, this.timeout, opts.concurrency, limits),
    });
    if (!Array.isArray(answer.results)) {
      throw new ProtocolError(`batch answer without a 'results' list: ${JSON.stringify(answer).slice(0, 200)}`);
    }
    if (opts.raiseOnError) {
      const failed = answer.results.find(isBatchError);
      if (failed) throw errorFromBody(failed);
    }
    return answer.results;
  }

  // --- sessions

  /** Creates a session (one box kept for several executions). Close it when done. */
  async session(opts: SessionOptions = {}): Promise<Session> {
    const body: Record<string, unknown> = {};
    const policy = opts.policy ?? this.policy;
    if (policy !== undefined) body.policy = policy;
    if (opts.language !== undefined) body.language = opts.language;
    if (opts.idle_timeout !== undefined) body.idle_timeout = opts.idle_timeout;
    if (opts.max_lifetime !== undefined) body.max_lifetime = opts.max_lifetime;
    if (opts.setup !== undefined) body.setup = opts.setup;
    if (opts.changes) body.changes = true;
    const info = await this.transport.json<SessionInfo>({
      method: "POST", path: "/v1/sessions", json: body, timeoutMs: httpTimeoutMs(this.timeout),
    });
    if (typeof info?.session_id !== "string") {
      throw new ProtocolError(`session created without a session_id: ${JSON.stringify(info).slice(0, 200)}`);
    }
    return new Session(this.transport, this.timeout, info, this.policyTimeouts);
  }

  /** Creates a session, runs `fn` with it and closes it, even when `fn` throws. */
  async withSession<T>(fn: (s: Session) => Promise<T>, opts: SessionOptions = {}): Promise<T> {
    const s = await this.session(opts);
    try {
      return await fn(s);
    } finally {
      await s.close().catch(() => undefined);
    }
  }

  /** A Session object for an existing session id (e.g. created by another process). */
  async attachSession(sessionId: string): Promise<Session> {
    const info = await this.transport.json<SessionInfo>({
      method: "GET", path: `/v1/sessions/${segment(sessionId)}`, timeoutMs: httpTimeoutMs(this.timeout),
    });
    return new Session(this.transport, this.timeout, info, this.policyTimeouts);
  }

  /** Every live session on the daemon. */
  async listSessions(): Promise<SessionInfo[]> {
    const answer = await this.transport.json<{ sessions: SessionInfo[] }>({
      method: "GET", path: "/v1/sessions", timeoutMs: httpTimeoutMs(this.timeout),
    });
    return answer.sessions;
  }

  /** Resumes a paused session by its id (paused by another process, or before a restart). */
  async resumeSession(sessionId: string): Promise<Session> {
    const info = await this.transport.json<SessionResumeInfo>({
      method: "POST", path: `/v1/sessions/${segment(sessionId)}/resume`, json: {},
      timeoutMs: Math.max(httpTimeoutMs(this.timeout), 30_000),
    });
    return new Session(this.transport, this.timeout, info, this.policyTimeouts);
  }

  // --- monitoring: what the dashboard reads (docs/api.md "Monitoring")

  /** The caller's running and recent executions. */
  listExecutions(filter: ExecutionFilter = {}): Promise<ExecutionsView> {
    return this.transport.json({
      method: "GET", path: "/v1/executions" + query({ ...filter }), timeoutMs: httpTimeoutMs(this.timeout),
    });
  }

  /** A page of the audit log, newest first; NotFound when the daemon keeps none. */
  history(filter: ExecutionFilter & { cursor?: string } = {}): Promise<HistoryPage> {
    return this.transport.json({
      method: "GET", path: "/v1/history" + query({ ...filter }), timeoutMs: httpTimeoutMs(this.timeout),
    });
  }

  /** The daemon's and host's totals, the executor, the pool and the caller's sessions. */
  overview(): Promise<Record<string, unknown>> {
    return this.transport.json({ method: "GET", path: "/v1/overview", timeoutMs: httpTimeoutMs(this.timeout) });
  }

  /**
   * Follows the monitoring events (execution_started, usage, execution_finished, alert,
   * session_created, ...); `types` keeps only those. Leaving the loop closes the connection.
   */
  events(opts: { types?: readonly string[]; signal?: AbortSignal } = {}): AsyncGenerator<StreamedEvent> {
    return follow(this.transport, "/v1/events" + query({ types: opts.types?.join(",") }), opts.signal);
  }

  /** The daemon's image store. */
  async images(): Promise<Record<string, unknown>[]> {
    const answer = await this.transport.json<{ images: Record<string, unknown>[] }>({
      method: "GET", path: "/v1/images", timeoutMs: httpTimeoutMs(this.timeout),
    });
    if (!Array.isArray(answer?.images)) throw new ProtocolError("images answer without an 'images' list");
    return answer.images;
  }

  // --- policies and health

  /** The daemon's policies: name, description, backend, network, languages. */
  async policies(): Promise<PolicySummary[]> {
    const answer = await this.transport.json<{ policies: PolicySummary[] }>({
      method: "GET", path: "/v1/policies", timeoutMs: httpTimeoutMs(this.timeout),
    });
    if (!Array.isArray(answer?.policies)) throw new ProtocolError("policies answer without a 'policies' list");
    return answer.policies;
  }

  /**
   * One policy, resolved, with its per-control explain view (default: the client's `policy`).
   * Formerly `client.policy(name)`; `client.policy` is now the default policy's name.
   */
  getPolicy(name?: string): Promise<PolicyDetail> {
    const target = name ?? this.policy;
    if (!target) throw new TypeError("no policy name given and the client has no default policy");
    return this.transport.json<PolicyDetail>({
      method: "GET", path: `/v1/policies/${segment(target)}`, timeoutMs: httpTimeoutMs(this.timeout),
    });
  }

  /** GET /healthz: {status: "ok"} when the daemon is up. */
  health(): Promise<{ status: string }> {
    return this.transport.json({ method: "GET", path: "/healthz", timeoutMs: httpTimeoutMs(this.timeout) });
  }

  /** GET /readyz: {status: "ready", backend}; throws Unavailable when not ready. */
  ready(): Promise<{ status: string; backend: string }> {
    // Not retried: a 503 is the answer to "are you ready?".
    return this.transport.json({ method: "GET", path: "/readyz", timeoutMs: httpTimeoutMs(this.timeout), retry: false });
  }
}

/** True for a batch entry the daemon refused. */
export function isBatchError(e: BatchEntry): e is { error: { code: string; message: string } } {
  return typeof e === "object" && e !== null && "error" in e && !("exit_code" in e);
}

function query(params: Record<string, string | number | undefined>): string {
  const q = Object.entries(params).filter(([, v]) => v !== undefined && v !== "")
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join("&");
  return q ? "?" + q : "";
}

function decodeEvent(m: SSEMessage): StreamEvent {
  const data = sseData(m);
  if (m.event === "stdout" || m.event === "stderr") {
    const d = data as { data?: unknown; data_base64?: unknown } | undefined;
    const text = d?.data;
    if (typeof text !== "string") throw new ProtocolError(`SSE ${m.event} event without a string 'data'`);
    let bytes: Uint8Array;
    if (d?.data_base64 === undefined || d.data_base64 === null) bytes = new TextEncoder().encode(text);
    else if (typeof d.data_base64 === "string") bytes = fromBase64(d.data_base64, `SSE ${m.event} event's data_base64`);
    else throw new ProtocolError(`SSE ${m.event} event's data_base64 is not a string`);
    return { kind: m.event, data: text, bytes };
  }
  return { kind: m.event, data } as StreamEvent;
}

