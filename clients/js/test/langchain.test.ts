/**
 * A LangChain.js agent (langchain's createAgent, the REAL npm packages) uses the sandbox tool
 * against the REAL daemon.
 *
 * The chat model is `fakeModel()` from @langchain/core/testing: a SCRIPTED TEST DOUBLE standing in
 * for a paid LLM API. It replies with a tool call on its first turn and, on its second, with a
 * sentence built from the tool message it received, so the final answer proves the agent got the
 * sandbox's output back through LangChain.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { createAgent } from "langchain";
import { SandboxClient } from "@llm-sandbox/client";
import { createSandboxTool } from "@llm-sandbox/client/langchain";
import { Daemon } from "./harness.js";

let daemon: Daemon;
let client: SandboxClient;

before(async () => {
  daemon = await Daemon.start();
  client = new SandboxClient({ baseUrl: daemon.url });
});
after(async () => { await daemon?.stop(); });

/** The scripted model's second turn: repeat what the tool returned. */
function answerFromTool(messages: BaseMessage[]): AIMessage {
  const toolMsg = [...messages].reverse().find((m) => ToolMessage.isInstance(m));
  return new AIMessage(`The sandbox answered:\n${toolMsg ? String(toolMsg.content) : "(nothing)"}`);
}

describe("LangChain.js tool", () => {
  test("schema offers only the allowed policies; description says what each is for", async () => {
    const tool = await createSandboxTool({ client, policies: ["python-strict", "bash-tools"] });
    assert.equal(tool.name, "run_code");
    const schema = tool.schema as { properties: { policy: { enum: string[] } }; required: string[] };
    assert.deepEqual(schema.properties.policy.enum, ["python-strict", "bash-tools"]);
    assert.deepEqual(schema.required, ["code"]);
    assert.match(tool.description, /python-strict \(default\): Untrusted Python snippets/);
    assert.match(tool.description, /bash-tools: Shell scripts using coreutils-style tools/);
    assert.doesNotMatch(tool.description, /research-trace/);
    // What a provider integration would send to a real model (OpenAI tool format).
    const spec = convertToOpenAITool(tool) as unknown as { function: { name: string; parameters: { properties: { policy: { enum: string[] } } } } };
    assert.equal(spec.function.name, "run_code");
    assert.deepEqual(spec.function.parameters.properties.policy.enum, ["python-strict", "bash-tools"]);
  });

  test("an operator's typo in the allowed list is an error naming it", async () => {
    await assert.rejects(createSandboxTool({ client, policies: ["python-strikt"] }), /python-strikt/);
  });

  test("by default only the policies the daemon's backend can run are offered", async () => {
    const listed = await client.policies();
    const runnable = listed.filter((p) => p.runnable !== false).map((p) => p.name);
    const tool = await createSandboxTool({ client });
    const schema = tool.schema as { properties: { policy: { enum: string[] } } };
    assert.deepEqual(schema.properties.policy.enum, runnable);
    assert.ok(listed.every((p) => typeof p.runnable === "boolean" && p.description.trim() !== ""));
    // On the native backend python-gvisor (runtime runsc) is listed but not runnable: naming it is
    // an operator error carrying the daemon's reason, not a tool that fails every call.
    for (const p of listed.filter((q) => q.runnable === false)) {
      await assert.rejects(createSandboxTool({ client, policies: [p.name] }),
        (e: Error) => e instanceof TypeError && e.message.includes("cannot run on this daemon's backend") &&
          e.message.includes("fix:"));
    }
  });

  test("a createAgent agent emits a tool call, the code runs in the daemon, the output comes back", async () => {
    const runCode = await createSandboxTool({ client, policies: ["python-strict", "bash-tools"] });
    // Scripted test double for a paid LLM API (see the file's comment).
    const model = fakeModel()
      .respondWithTools([{ name: "run_code", id: "call_1", args: { code: "import sys\nprint(sum(range(10)), sys.version_info[0])", policy: "python-strict" } }])
      .respond(answerFromTool);
    const agent = createAgent({ model, tools: [runCode] });
    const out = await agent.invoke({ messages: [new HumanMessage("What is the sum of 0..9? Run code to check.")] });

    const messages = out.messages as BaseMessage[];
    const toolMsg = messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    assert.ok(toolMsg, "the agent ran the tool");
    assert.equal(toolMsg.tool_call_id, "call_1");
    assert.match(String(toolMsg.content), /status: ok \(exit code 0, \d+ ms, policy python-strict\)/);
    assert.match(String(toolMsg.content), /stdout:\n45 3\n/);
    const final = messages.at(-1)!;
    assert.ok(AIMessage.isInstance(final));
    assert.match(String(final.content), /The sandbox answered:[\s\S]*45 3/);
    // The model was offered the tool with the policy enum.
    assert.equal(model.callCount, 2);
  });

  test("the agent may pick another allowed policy; alerts and failures come back as text", async () => {
    const runCode = await createSandboxTool({ client, policies: ["python-strict", "bash-tools"] });
    const model = fakeModel()
      .respondWithTools([
        { name: "run_code", id: "sh", args: { code: "echo from-bash; echo $((6*7))", policy: "bash-tools", language: "bash" } },
        { name: "run_code", id: "net", args: { code: "import socket\ns=socket.socket()\ns.connect(('127.0.0.1', 6379))", policy: "python-strict" } },
      ])
      .respond(answerFromTool);
    const agent = createAgent({ model, tools: [runCode] });
    const out = await agent.invoke({ messages: [new HumanMessage("try both")] });
    const tools = (out.messages as BaseMessage[]).filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
    const byId = new Map(tools.map((t) => [t.tool_call_id, String(t.content)]));
    assert.match(byId.get("sh")!, /policy bash-tools[\s\S]*stdout:\nfrom-bash\n42\n/);
    assert.match(byId.get("net")!, /status: error/);
    assert.match(byId.get("net")!, /alerts:\n- \[warning\] network_attempt: .*127\.0\.0\.1:6379/);
  });

  test("a policy outside the allowed list never reaches the daemon", async () => {
    const runCode = await createSandboxTool({ client, policies: ["python-strict"] });
    const model = fakeModel()
      .respondWithTools([{ name: "run_code", id: "bad", args: { code: "print(1)", policy: "research-trace" } }])
      .respond(answerFromTool);
    const agent = createAgent({ model, tools: [runCode] });
    const out = await agent.invoke({ messages: [new HumanMessage("use the trace policy")] });
    const toolMsg = (out.messages as BaseMessage[]).find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    // LangChain's schema check (enum) or the tool's own check refuses it; no execution result.
    assert.doesNotMatch(String(toolMsg.content), /status: /);
    assert.match(String(toolMsg.content), /research-trace|enum|policy/i);
  });

  test("a limit the policy forbids is told to the model as text", async () => {
    const runCode = await createSandboxTool({ client, policies: ["python-strict"], timeout: 9999 });
    const text = await runCode.invoke({ code: "print(1)" });
    assert.match(String(text), /^error: the policy does not allow this request \(forbidden\): .*timeout/);
  });

  test("a figure the program shows reaches the model as an image content block", async () => {
    const runCode = await createSandboxTool({ client, policies: ["research-trace"] });
    const code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('three points')\nplt.show()\nprint('plotted')";
    let seen: unknown = null;
    const model = fakeModel()
      .respondWithTools([{ name: "run_code", id: "plot", args: { code } }])
      .respond((messages: BaseMessage[]) => {
        const toolMsg = [...messages].reverse().find((m) => ToolMessage.isInstance(m))!;
        seen = toolMsg.content;
        return new AIMessage("I saw the plot.");
      });
    const agent = createAgent({ model, tools: [runCode] });
    await agent.invoke({ messages: [new HumanMessage("plot three points")] });
    // The model's next turn was given the tool message with a text block and a PNG image block.
    assert.ok(Array.isArray(seen), `content blocks, got: ${JSON.stringify(seen).slice(0, 300)}`);
    const blocks = seen as Array<Record<string, string>>;
    assert.equal(blocks[0].type, "text");
    assert.match(blocks[0].text, /status: ok[\s\S]*stdout:\nplotted\n[\s\S]*outputs:\n\[0\] \(image attached\)/);
    const images = blocks.filter((b) => b.type === "image");
    assert.equal(images.length, 1);
    assert.equal(images[0].mimeType, "image/png");
    const png = Buffer.from(images[0].data, "base64");
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.ok(png.length > 1000, "a rendered figure, not a stub");
    // Code that shows nothing keeps the plain-text tool message.
    const text = await runCode.invoke({ code: "print(2)" });
    assert.equal(typeof text, "string");
  });
});
