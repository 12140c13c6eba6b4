/**
 * A LlamaIndex.TS agent (`agent()` from @llamaindex/workflow, the REAL npm packages) uses the
 * sandbox FunctionTool against the REAL daemon.
 *
 * The LLM is `ScriptedLLM` below: a SCRIPTED TEST DOUBLE standing in for a paid LLM API, built on
 * LlamaIndex's own ToolCallLLM base class. (The package's MockLLM answers every turn with the same
 * tool call, so an agent driven by it never finishes.) Its first turn emits a tool call; its
 * second repeats the tool result it received, so the agent's final answer proves the sandbox's
 * output came back through LlamaIndex.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  ToolCallLLM, type ChatMessage, type ChatResponse, type ChatResponseChunk, type LLMChatParamsNonStreaming,
  type LLMChatParamsStreaming, type LLMMetadata, type ToolCall, type ToolCallLLMMessageOptions,
} from "llamaindex";
import { agent, agentToolCallResultEvent, stopAgentEvent, type AgentToolCallResult } from "@llamaindex/workflow";
import { SandboxClient } from "@llm-sandbox/client";
import { createSandboxFunctionTool } from "@llm-sandbox/client/llamaindex";
import { Daemon } from "./harness.js";

type Turn = { toolCalls: ToolCall[] } | { reply: (messages: ChatMessage<ToolCallLLMMessageOptions>[]) => string };

/** Test double for a paid LLM: plays its turns in order, records what it was sent. */
class ScriptedLLM extends ToolCallLLM {
  supportToolCall = true;
  metadata: LLMMetadata = {
    model: "scripted-test-double", temperature: 0, topP: 1, contextWindow: 8192,
    tokenizer: undefined, structuredOutput: false,
  };
  readonly seen: Array<{ messages: ChatMessage[]; toolNames: string[] }> = [];

  constructor(private readonly turns: Turn[]) { super(); }

  chat(params: LLMChatParamsStreaming<object, ToolCallLLMMessageOptions>): Promise<AsyncIterable<ChatResponseChunk>>;
  chat(params: LLMChatParamsNonStreaming<object, ToolCallLLMMessageOptions>): Promise<ChatResponse<ToolCallLLMMessageOptions>>;
  async chat(params: LLMChatParamsStreaming<object, ToolCallLLMMessageOptions> | LLMChatParamsNonStreaming<object, ToolCallLLMMessageOptions>):
    Promise<AsyncIterable<ChatResponseChunk> | ChatResponse<ToolCallLLMMessageOptions>> {
    this.seen.push({ messages: params.messages, toolNames: (params.tools ?? []).map((t) => t.metadata.name) });
    const turn = this.turns.shift();
    if (!turn) throw new Error("ScriptedLLM: no turn left");
    const message: ChatMessage<ToolCallLLMMessageOptions> = "toolCalls" in turn
      ? { role: "assistant", content: "", options: { toolCall: turn.toolCalls } }
      : { role: "assistant", content: turn.reply(params.messages) };
    if (!params.stream) return { message, raw: null };
    return (async function* () {
      yield { delta: typeof message.content === "string" ? message.content : "", raw: null, options: message.options };
    })();
  }
}

/** The tool results the LLM was shown (LlamaIndex passes them as messages with toolResult). */
function toolResults(messages: ChatMessage<ToolCallLLMMessageOptions>[]): string[] {
  return messages.flatMap((m) => (m.options && "toolResult" in m.options ? [m.options.toolResult.result] : []));
}

let daemon: Daemon;
let client: SandboxClient;

before(async () => {
  daemon = await Daemon.start();
  client = new SandboxClient({ baseUrl: daemon.url });
});
after(async () => { await daemon?.stop(); });

describe("LlamaIndex.TS FunctionTool", () => {
  test("metadata: name, policy descriptions, JSON Schema with the allowed policies as an enum", async () => {
    const tool = await createSandboxFunctionTool({ client, policies: ["python-strict", "research-trace"] });
    const md = tool.metadata;
    assert.equal(md.name, "run_code");
    assert.match(md.description, /python-strict \(default\): Untrusted Python snippets/);
    assert.match(md.description, /research-trace: Python and shell with full tracing/);
    const params = md.parameters as { properties: { policy: { enum: string[] } }; required: string[] };
    assert.deepEqual(params.properties.policy.enum, ["python-strict", "research-trace"]);
    assert.deepEqual(params.required, ["code"]);
  });

  test("an agent emits a tool call, the code runs in the daemon, the output comes back", async () => {
    const runCode = await createSandboxFunctionTool({ client, policies: ["python-strict", "research-trace"] });
    const llm = new ScriptedLLM([
      { toolCalls: [{ id: "call_1", name: "run_code", input: { code: "print(sum(range(10)) * 2)", policy: "research-trace" } }] },
      { reply: (messages) => `The sandbox answered:\n${toolResults(messages).join("\n")}` },
    ]);
    const workflow = agent({ llm, tools: [runCode] });
    const calls: AgentToolCallResult[] = [];
    let final: string | undefined;
    for await (const ev of workflow.runStream("Double the sum of 0..9; run code to check.")) {
      if (agentToolCallResultEvent.include(ev)) calls.push(ev.data);
      if (stopAgentEvent.include(ev)) final = String(ev.data.result);
    }
    assert.equal(calls.length, 1);
    assert.equal(calls[0].toolId, "call_1");
    assert.equal(calls[0].toolOutput.isError, false);
    // The agent workflow JSON-encodes a tool's string output for the model (stringifyJSONToMessageContent:
    // newlines become the two characters \n), so compare after undoing that.
    const shown = String(calls[0].toolOutput.result).replace(/\\n/g, "\n");
    assert.match(shown, /status: ok \(exit code 0, \d+ ms, policy research-trace\)\nstdout:\n90\n/);
    assert.match((final ?? "").replace(/\\n/g, "\n"), /The sandbox answered:[\s\S]*stdout:\n90/);
    assert.deepEqual(llm.seen[0].toolNames, ["run_code"]);
    assert.equal(llm.seen.length, 2);
  });

  test("a policy outside the allowed list is refused by the tool, not run", async () => {
    const runCode = await createSandboxFunctionTool({ client, policies: ["python-strict"] });
    const out = await runCode.call({ code: "print(1)", policy: "research-trace" });
    assert.match(out, /^error: policy "research-trace" is not available to you; choose one of: python-strict$/);
  });

  test("a figure is named in the text: LlamaIndex tool results carry text only", async () => {
    const runCode = await createSandboxFunctionTool({ client, policies: ["research-trace"] });
    const out = await runCode.call({ code: "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()" });
    assert.match(out, /status: ok[\s\S]*outputs:\n\[0\] \(image\/png image, not shown: this tool returns text only\)/);
    assert.doesNotMatch(out, /iVBOR/);  // no base64 flooding the model's context
  });
});
