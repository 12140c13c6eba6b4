/**
 * Program output as bytes (docs/api.md "Binary output"). `stdout`/`stderr` are text: when a
 * program writes bytes that are not valid UTF-8 they hold U+FFFD in their place, and the daemon
 * also sends the exact bytes as `stdout_base64`/`stderr_base64` (and `data_base64` on streamed
 * output events).
 */
import { ProtocolError } from "./errors.js";
import type { ExecResult } from "./types.js";

/** Decodes standard base64 (the daemon's), refusing anything else. */
export function fromBase64(b64: string, what: string): Uint8Array {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw new ProtocolError(`${what} is not valid base64`);
  return new Uint8Array(Buffer.from(b64, "base64"));
}

/** The exact bytes of a result's stdout or stderr (base64 when given, else the text as UTF-8). */
export function outputBytes(result: Pick<ExecResult, "stdout" | "stderr" | "stdout_base64" | "stderr_base64">,
                            stream: "stdout" | "stderr" = "stdout"): Uint8Array {
  const b64 = stream === "stdout" ? result.stdout_base64 : result.stderr_base64;
  if (typeof b64 === "string") return fromBase64(b64, `the result's ${stream}_base64`);
  return new TextEncoder().encode((stream === "stdout" ? result.stdout : result.stderr) ?? "");
}
