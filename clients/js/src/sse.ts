/**
 * An incremental parser for server-sent events (the streaming form of POST /v1/execute).
 *
 * Bytes arrive in arbitrary pieces, so the parser keeps the unfinished line and event between
 * calls. WHATWG rules: lines end in LF, CRLF or CR; `field: value` with one optional space;
 * several `data` lines join with LF; a blank line dispatches; `:` lines are comments.
 */

export interface SSEMessage {
  event: string;
  data: string;
  id?: string;
}

export class SSEParser {
  private buffer = "";
  private pendingCR = false;
  private event: string | undefined;
  private data: string[] = [];
  private hasData = false;
  private id: string | undefined;
  // A streaming decoder, so a multi-byte character split between chunks stays whole.
  private readonly decoder = new TextDecoder("utf-8");

  /** Feeds bytes; returns the events those bytes completed. */
  feed(chunk: Uint8Array): SSEMessage[] {
    return this.feedText(this.decoder.decode(chunk, { stream: true }));
  }

  /** End of stream: a complete last line without its blank line is still dispatched. */
  close(): SSEMessage[] {
    const out = this.feedText(this.decoder.decode());
    if (this.buffer) {
      this.line(this.buffer, out);
      this.buffer = "";
    }
    if (this.hasData || this.event !== undefined) this.dispatch(out);
    return out;
  }

  private feedText(text: string): SSEMessage[] {
    const out: SSEMessage[] = [];
    if (!text) return out;
    let buf = this.buffer + text;
    // A CR at the end of the previous piece may be the first half of a CRLF.
    if (this.pendingCR && buf.startsWith("\n")) buf = buf.slice(1);
    this.pendingCR = false;
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(buf.slice(start, i), out);
      if (c === 13) {
        if (i + 1 < buf.length) {
          if (buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCR = true;
        }
      }
      start = i + 1;
    }
    this.buffer = buf.slice(start);
    return out;
  }

  private line(line: string, out: SSEMessage[]): void {
    if (line === "") {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event": this.event = value; break;
      case "data": this.data.push(value); this.hasData = true; break;
      case "id": if (!value.includes("\0")) this.id = value; break;
      default: break; // "retry" and unknown fields do not matter to this client
    }
  }

  private dispatch(out: SSEMessage[]): void {
    if (this.hasData) {
      out.push({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
    }
    this.event = undefined;
    this.data = [];
    this.hasData = false;
  }
}
