// `llm-sandbox mcp` (stdio transport) driven by the official SDK's Client + StdioClientTransport.
import { after, before, describe } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { BINARY, POLICY_ARGS, SOURCE_DIR } from "./harness.mjs";
import { toolTests } from "./tools.mjs";

describe("llm-sandbox mcp (stdio)", () => {
  let client;
  let stderr = "";
  before(async () => {
    const transport = new StdioClientTransport({
      command: BINARY, args: ["mcp", ...POLICY_ARGS], cwd: SOURCE_DIR, stderr: "pipe",
    });
    transport.stderr.on("data", (d) => { stderr += d; });
    client = new Client({ name: "lsb-mcp-test", version: "0.0.1" });
    await client.connect(transport);
  });
  after(async () => {
    await client?.close();
    if (process.env.LSB_MCP_VERBOSE) process.stderr.write(stderr);
  });
  toolTests(() => client);
});
