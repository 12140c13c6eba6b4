// The daemon's /mcp (Streamable HTTP transport) driven by the official SDK's Client +
// StreamableHTTPClientTransport, plus the transport's session rules checked with plain fetch.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startDaemon } from "./harness.mjs";
import { toolTests } from "./tools.mjs";

describe("llm-sandbox serve /mcp (Streamable HTTP)", () => {
  let daemon;
  let client;
  let transport;
  before(async () => {
    daemon = await startDaemon();
    transport = new StreamableHTTPClientTransport(new URL(`${daemon.url}/mcp`));
    client = new Client({ name: "lsb-mcp-test", version: "0.0.1" });
    await client.connect(transport);
    assert.ok(transport.sessionId, "the server assigned an Mcp-Session-Id");
  });
  after(async () => {
    try {
      await client?.close();
    } finally {
      await daemon?.stop();
    }
  });

  toolTests(() => client);

  const post = (body, headers = {}) => fetch(`${daemon.url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

  test("transport rules: GET is 405, no session id is 400, bad JSON is -32700", async () => {
    assert.equal((await fetch(`${daemon.url}/mcp`)).status, 405);
    const noSession = await post({ jsonrpc: "2.0", id: 1, method: "ping" });
    assert.equal(noSession.status, 400);
    const bad = await post("{not json");
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.code, -32700);
  });

  test("a deleted MCP session is 404; a notification is 202", async () => {
    const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    assert.equal(init.status, 200);
    assert.equal((await init.json()).result.protocolVersion, "2025-06-18");
    const sid = init.headers.get("mcp-session-id");
    assert.match(sid, /^[0-9a-f]{32}$/);
    const h = { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" };
    assert.equal((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, h)).status, 202);
    const ping = await post({ jsonrpc: "2.0", id: 2, method: "ping" }, h);
    assert.deepEqual(await ping.json(), { jsonrpc: "2.0", id: 2, result: {} });
    const del = await fetch(`${daemon.url}/mcp`, { method: "DELETE", headers: h });
    assert.equal(del.status, 204);
    assert.equal((await post({ jsonrpc: "2.0", id: 3, method: "ping" }, h)).status, 404);
  });
});
