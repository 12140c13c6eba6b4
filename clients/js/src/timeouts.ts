/**
 * How long a policy lets a program run, so the client's HTTP wait outlasts the daemon's deadline.
 *
 * A call that names no `timeout` runs under its policy's (`resources.timeout_ms` of GET
 * /v1/policies/{name}), which may be longer than the client's own `timeout`: waiting only that
 * long would give up while the daemon still runs the program, and its result would be lost. The
 * client looks the policy's timeout up once, keeps it for TTL_MS (a policy reload is picked up
 * after that) and waits at least that long plus TIMEOUT_MARGIN_S. A lookup is not retried, and a
 * busy or unreachable daemon's answer is not remembered. As in the Python client's
 * _policy_timeouts module.
 */
import { segment } from "./body.js";
import { ConnectionFailed, RateLimited, RequestTimedOut, SandboxError, Unavailable } from "./errors.js";
import type { Transport } from "./http.js";

/** Milliseconds a looked-up policy timeout is trusted before it is asked for again. */
export const TTL_MS = 60_000;

/** Stands for "the daemon's default policy" (a client with policy: null) in the cache. */
const DEFAULT_KEY = "\0default";

export class PolicyTimeouts {
  private readonly entries = new Map<string, { at: number; seconds: number | undefined }>();

  constructor(private readonly transport: Transport, private readonly baseTimeoutMs: () => number,
              private readonly ttlMs = TTL_MS) {}

  /**
   * The policy's timeout in seconds; undefined when it cannot be learned (an unknown policy, an
   * older daemon): then the client's own timeout applies. A daemon that cannot be reached is
   * not remembered: the call itself will say what failed, and the next one asks again.
   */
  async seconds(policy: string | undefined): Promise<number | undefined> {
    const key = policy ?? DEFAULT_KEY;
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at <= this.ttlMs) return hit.seconds;
    let seconds: number | undefined;
    try {
      const name = policy ?? await this.defaultName();
      seconds = name === undefined ? undefined : await this.lookup(name);
    } catch (err) {
      // Busy or unreachable: not remembered, the call goes on with the client's own timeout.
      if (err instanceof ConnectionFailed || err instanceof RequestTimedOut || err instanceof RateLimited
          || err instanceof Unavailable || !(err instanceof SandboxError)) {
        return undefined;
      }
      seconds = undefined;
    }
    this.entries.set(key, { at: Date.now(), seconds });
    return seconds;
  }

  private async lookup(name: string): Promise<number | undefined> {
    const detail = await this.transport.json<{ policy?: { resources?: { timeout_ms?: unknown } } }>({
      method: "GET", path: `/v1/policies/${segment(name)}`, timeoutMs: this.baseTimeoutMs(), retry: false,
    });
    const ms = detail?.policy?.resources?.timeout_ms;
    return typeof ms === "number" && ms > 0 ? ms / 1000 : undefined;
  }

  private async defaultName(): Promise<string | undefined> {
    const list = await this.transport.json<{ policies?: Array<{ name?: unknown; default?: unknown }> }>({
      method: "GET", path: "/v1/policies", timeoutMs: this.baseTimeoutMs(), retry: false,
    });
    const found = (list?.policies ?? []).find((p) => p?.default === true && typeof p.name === "string");
    return found?.name as string | undefined;
  }
}
