/**
 * Typed errors for every error code of the LLM Sandbox HTTP API (docs/api.md).
 *
 * The daemon answers every failure with `{"error": {"code", "message"}}` and a status. An agent
 * usually has to tell apart "my request was wrong" (fix code or limits), "the daemon is busy"
 * (wait `retryAfter` seconds) and "the sandbox itself broke" (report it); one class per code keeps
 * those `instanceof` checks short. The class names match the Python client's exceptions.
 */

/** The API's error body. */
export interface ApiErrorBody {
  error: { code: string; message: string };
}

export interface SandboxErrorInit {
  code?: string;
  status?: number;
  retryAfter?: number;
  body?: unknown;
  cause?: unknown;
}

/** Base of every error thrown by this package. */
export class SandboxError extends Error {
  static readonly defaultCode: string = "error" as string;
  /** The API's snake_case code (`forbidden`, `too_many_requests`...) or a client-side one. */
  readonly code: string;
  /** The HTTP status, or undefined when no HTTP answer was received. */
  readonly status?: number;
  /** Seconds the daemon asked us to wait (429/503). */
  readonly retryAfter?: number;
  /** The decoded error body, for debugging. */
  readonly body?: unknown;

  constructor(message: string, init: SandboxErrorInit = {}) {
    super(message, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.name = new.target.name;
    this.code = init.code ?? (new.target as typeof SandboxError).defaultCode;
    this.status = init.status;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }

  override toString(): string {
    const prefix = this.status !== undefined ? `[${this.status} ${this.code}]` : `[${this.code}]`;
    return `${this.name}: ${prefix} ${this.message}`;
  }
}

/** 400: the request is malformed (missing code, bad path, unknown language...). */
export class BadRequest extends SandboxError { static override readonly defaultCode: string = "bad_request"; }
/** 405: the route exists but not with this method. */
export class MethodNotAllowed extends BadRequest { static override readonly defaultCode: string = "method_not_allowed"; }
/** 415: the body's Content-Type is not what the route takes. */
export class UnsupportedMediaType extends BadRequest { static override readonly defaultCode: string = "unsupported_media_type"; }
/** 401: no bearer token, or an unknown one. Pass `token` or set $LLM_SANDBOX_TOKEN. */
export class Unauthorized extends SandboxError { static override readonly defaultCode: string = "unauthorized"; }
/** 403: the request would loosen its policy; the message names the field. */
export class Forbidden extends SandboxError { static override readonly defaultCode: string = "forbidden"; }
/** 404: no such policy, session or file. */
export class NotFound extends SandboxError { static override readonly defaultCode: string = "not_found"; }
/** 409: the session is busy with another execution. */
export class Conflict extends SandboxError { static override readonly defaultCode: string = "conflict"; }
/** 413: the request body or an uploaded file is above the daemon's bound. */
export class PayloadTooLarge extends SandboxError { static override readonly defaultCode: string = "payload_too_large"; }
/** 429: the daemon's queue is full; wait `retryAfter` seconds and retry. */
export class RateLimited extends SandboxError { static override readonly defaultCode: string = "too_many_requests"; }
/** 503: the daemon is not ready or is shutting down. */
export class Unavailable extends SandboxError { static override readonly defaultCode: string = "unavailable"; }
/** 502: the sandbox itself failed (init died, backend down); the message carries the cause. */
export class SandboxFailure extends SandboxError { static override readonly defaultCode: string = "sandbox_error"; }
/** 500 or another 5xx: a bug or an unexpected condition in the daemon. */
export class ServerError extends SandboxError { static override readonly defaultCode: string = "internal"; }
/** The daemon could not be reached at all (refused, DNS, reset before an answer). */
export class ConnectionFailed extends SandboxError { static override readonly defaultCode: string = "connection_failed"; }
/** No answer within the client's HTTP timeout (the daemon may still be running the code). */
export class RequestTimedOut extends SandboxError { static override readonly defaultCode: string = "timeout"; }
/** The daemon's answer is not what docs/api.md promises (bad JSON, broken framing). */
export class ProtocolError extends SandboxError { static override readonly defaultCode: string = "protocol_error"; }

/** The usual reason for a 403: asking for more than the policy allows. */
export const PolicyViolation = Forbidden;

type ErrorClass = new (message: string, init?: SandboxErrorInit) => SandboxError;

const BY_STATUS: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  [400, BadRequest], [401, Unauthorized], [403, Forbidden], [404, NotFound],
  [405, MethodNotAllowed], [409, Conflict], [413, PayloadTooLarge], [415, UnsupportedMediaType],
  [429, RateLimited], [500, ServerError], [502, SandboxFailure], [503, Unavailable],
]);

const BY_CODE: ReadonlyMap<string, ErrorClass> = new Map<string, ErrorClass>([
  ["bad_request", BadRequest], ["unauthorized", Unauthorized], ["forbidden", Forbidden],
  ["not_found", NotFound], ["method_not_allowed", MethodNotAllowed], ["conflict", Conflict],
  ["payload_too_large", PayloadTooLarge], ["unsupported_media_type", UnsupportedMediaType],
  ["too_many_requests", RateLimited], ["unavailable", Unavailable],
  ["sandbox_error", SandboxFailure], ["internal", ServerError],
]);

/** The class for a status (preferred) or, for SSE "error" events and batch entries, a code. */
export function classFor(status?: number, code?: string): ErrorClass {
  if (status !== undefined) {
    const byStatus = BY_STATUS.get(status);
    if (byStatus) return byStatus;
    return status >= 400 && status < 500 ? BadRequest : ServerError;
  }
  return BY_CODE.get(code ?? "") ?? SandboxError;
}

/**
 * Retry-After in seconds: the delay-seconds form (the daemon's) or an HTTP date (a proxy's),
 * counted from `nowMs`. A date in the past is 0; anything unreadable is undefined.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const text = value.trim();
  if (text === "") return undefined;
  const seconds = Number(text);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  // Only the IMF-fixdate form of RFC 9110 (and its obsolete variants) names a weekday or month.
  if (!/[A-Za-z]{3}/.test(text)) return undefined;
  const when = Date.parse(text);
  return Number.isFinite(when) ? Math.max(0, (when - nowMs) / 1000) : undefined;
}

/**
 * True when the daemon itself said it did not take the request: a 429/503 whose body is the API's
 * error object with code too_many_requests/unavailable. A bare 503 from a proxy in front of it
 * does not prove that, so a POST is not retried on one.
 */
export function refusedBeforeRunning(err: SandboxError): boolean {
  if (!isErrorBody(err.body)) return false;
  return err.body.error.code === "too_many_requests" || err.body.error.code === "unavailable";
}

function isErrorBody(x: unknown): x is ApiErrorBody {
  return typeof x === "object" && x !== null && typeof (x as ApiErrorBody).error === "object"
    && (x as ApiErrorBody).error !== null;
}

/**
 * The typed error for a decoded `{"error": {...}}` object. Also used for failed batch entries
 * and the SSE "error" event, which carry the same object without an HTTP status of their own.
 */
export function errorFromBody(payload: unknown, status?: number, retryAfter?: number): SandboxError {
  let code: string | undefined;
  let message = "(no error object in the answer)";
  if (isErrorBody(payload)) {
    code = payload.error.code ? String(payload.error.code) : undefined;
    message = payload.error.message ? String(payload.error.message) : "(no message)";
  }
  const Cls = classFor(status, code);
  return new Cls(message, { code, status, retryAfter, body: payload });
}

/**
 * Maps a non-2xx answer to its error, even when the body is not the API's JSON (a proxy's HTML
 * page, an empty 502): the status alone decides the class then.
 */
export function errorFromResponse(status: number, headers: Headers, body: Uint8Array, url = ""): SandboxError {
  const retryAfter = parseRetryAfter(headers.get("retry-after"));
  const text = new TextDecoder().decode(body);
  let payload: unknown;
  try {
    payload = text ? JSON.parse(text) : undefined;
  } catch {
    payload = undefined;
  }
  if (isErrorBody(payload)) return errorFromBody(payload, status, retryAfter);
  const snippet = text.slice(0, 300).trim();
  const where = url ? ` from ${url}` : "";
  const message = `HTTP ${status}${where}` + (snippet ? `: ${snippet}` : " with an empty body");
  const Cls = classFor(status);
  return new Cls(message, { status, retryAfter, body: snippet || undefined });
}
