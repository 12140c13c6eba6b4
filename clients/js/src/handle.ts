/**
 * Handles of asynchronous executions (docs/api.md "Asynchronous executions"). `client.submit()`
 * queues code and returns an ExecutionHandle at once; `handle.result(timeout)` long-polls GET
 * /v1/executions/{id}?wait= until the daemon has the result. The daemon keeps the result, not the
 * connection: a long-poll whose connection breaks is asked again by id, so a dropped connection
 * does not lose a result. (`SandboxClient.execute()` is one request that waits; the Python client's
 * execute() is built on submit.)
 */
import { errorFromBody, ConnectionFailed, ProtocolError, RequestTimedOut } from "./errors.js";
import type { ExecutionState } from "./types.js";

/** Seconds one long-poll may wait (the daemon allows up to 60). */
export const LONG_POLL_S = 30;
/** Broken long-polls asked again, backing off from RECONNECT_DELAY_S doubling, before throwing. */
export const RECONNECT_TRIES = 8;
export const RECONNECT_DELAY_S = 0.1;

/** GET /v1/executions/{id}[?wait=S]: how a handle asks the daemon. */
export type ExecutionFetch = (waitSeconds: number) => Promise<ExecutionState>;

export class ExecutionHandle<R = unknown> {
  constructor(readonly id: string, private readonly fetch: ExecutionFetch) {}

  /** The id, so code that used executeAsync's bare id (before it returned a handle) still works. */
  toString(): string { return this.id; }

  /** The execution's view now: state queued | running | finished, result or error once finished. */
  status(): Promise<ExecutionState> { return this.fetch(0); }

  /**
   * Waits for the result (an ExecResult; a batch's whole answer for submitBatch) and returns it;
   * an execution the daemon could not run throws its typed error. `timeout`: seconds at most
   * (default: until it finishes); past it RequestTimedOut, and the result stays kept.
   */
  async result(timeout?: number): Promise<R> {
    const deadline = timeout === undefined ? undefined : Date.now() + timeout * 1000;
    let failures = 0;
    for (;;) {
      const left = deadline === undefined ? LONG_POLL_S : Math.max(0, (deadline - Date.now()) / 1000);
      let view: ExecutionState | undefined;
      try {
        view = await this.fetch(Math.min(left, LONG_POLL_S));
        failures = 0;
      } catch (e) {
        const transient = e instanceof ConnectionFailed || e instanceof ProtocolError || e instanceof RequestTimedOut;
        if (!transient || ++failures > RECONNECT_TRIES) throw e;
        await new Promise((r) => setTimeout(r, RECONNECT_DELAY_S * 1000 * 2 ** (failures - 1)));
      }
      if (view !== undefined && !["queued", "running", "finished"].includes(view.state as string)) {
        // Not the daemon's answer (a proxy's page, another service): never poll it forever.
        throw new ProtocolError(`GET /v1/executions/${this.id}: not an execution state: ${JSON.stringify(view).slice(0, 200)}`);
      }
      if (view?.state === "finished") {
        if (view.error) throw errorFromBody(view);
        if (!view.result) throw new ProtocolError(`a finished execution without a result: ${JSON.stringify(view).slice(0, 200)}`);
        return view.result as R;
      }
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new RequestTimedOut(`execution ${this.id} did not finish within ${timeout} s; it is still kept ` +
          "by the daemon: call result() again, or client.execution(id) later");
      }
    }
  }
}
