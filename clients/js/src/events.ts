/**
 * Long-lived event streams (GET /v1/events, GET /v1/sessions/{id}/fs/watch): SSE messages as
 * `{event, data}` with data decoded from JSON, until the caller leaves the loop (which closes the
 * connection) or aborts `signal`. An "error" event is thrown as its typed error.
 */
import { ProtocolError, errorFromBody } from "./errors.js";
import { transportError, type HttpRequest, type Transport } from "./http.js";
import { SSEParser, type SSEMessage } from "./sse.js";

/** One message of an event stream: its name and its JSON data (undefined when it has none). */
export interface StreamedEvent { event: string; data: unknown }

/** How long one event stream may stay open (the transport's deadline is for the whole body). */
export const EVENT_STREAM_MS = 24 * 3600 * 1000;

/**
 * The SSE messages of one streamed answer, as they arrive; leaving the loop (or an error) cancels
 * the body, which closes the connection.
 */
export async function* sseMessages(transport: Transport, req: HttpRequest): AsyncGenerator<SSEMessage, void, undefined> {
  const resp = await transport.send(req);
  if (!resp.body) throw new ProtocolError("the event stream has no body");
  const parser = new SSEParser();
  const reader = resp.body.getReader();
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        throw transportError(err, resp.url, req);
      }
      yield* chunk.done ? parser.close() : parser.feed(chunk.value);
      if (chunk.done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);  // on break/return too: closes the connection
  }
}

export async function* follow(transport: Transport, path: string, signal?: AbortSignal):
    AsyncGenerator<StreamedEvent, void, undefined> {
  const req: HttpRequest = { method: "GET", path, accept: "text/event-stream", timeoutMs: EVENT_STREAM_MS, signal };
  for await (const m of sseMessages(transport, req)) yield { event: m.event, data: sseData(m) };
}

/** One SSE message's JSON data (undefined when it has none); an "error" event is thrown as its typed error. */
export function sseData(m: SSEMessage): unknown {
  let data: unknown;
  try {
    data = m.data ? JSON.parse(m.data) : undefined;
  } catch {
    throw new ProtocolError(`SSE event '${m.event}' carries data that is not JSON: ${m.data.slice(0, 200)}`);
  }
  if (m.event === "error") throw errorFromBody(data);
  return data;
}
