// The checks both transports must pass, run by stdio.test.mjs and http.test.mjs on a connected
// @modelcontextprotocol/sdk Client.
import assert from "node:assert/strict";
import { test } from "node:test";

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");

export function toolTests(getClient) {
  test("tools/list offers the sandbox tools, with the policies in execute_code's schema", async () => {
    const { tools } = await getClient().listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ["execute_code", "list_policies", "session_close", "session_create", "session_execute"]);
    const exec = tools.find((t) => t.name === "execute_code");
    assert.deepEqual(exec.inputSchema.required, ["code"]);
    const policy = exec.inputSchema.properties.policy;
    assert.ok(policy.enum.includes("code-sandbox"), JSON.stringify(policy));
    assert.match(exec.description, /code-sandbox/);
  });

  test("the tool schemas offer only the policies the backend can run, each with a description", async () => {
    const { tools } = await getClient().listTools();
    const listed = (await getClient().callTool({ name: "list_policies", arguments: {} })).structuredContent.policies;
    const runnable = listed.filter((p) => p.runnable).map((p) => p.name);
    const notRunnable = listed.filter((p) => !p.runnable).map((p) => p.name);
    // The suites run the daemon on the native backend: python-gvisor (runtime runsc) cannot run there.
    assert.ok(notRunnable.includes("python-gvisor"), JSON.stringify(listed));
    for (const name of ["execute_code", "session_create"]) {
      const schema = tools.find((t) => t.name === name).inputSchema.properties.policy;
      assert.deepEqual(schema.enum, runnable, name);
      assert.doesNotMatch(schema.description, /python-gvisor/, name);
    }
    const exec = tools.find((t) => t.name === "execute_code");
    assert.doesNotMatch(exec.description, /python-gvisor/);
    // Every offered policy's line carries its description ("- name: description [languages: ...]").
    for (const p of listed) {
      assert.ok(p.description.trim() !== "", `${p.name} has no description`);
      if (p.runnable) assert.ok(exec.description.includes(`${p.name}${p.default ? " (default)" : ""}: ${p.description}`), p.name);
    }
    assert.match(exec.description, /code-sandbox \(default\): Python with pip/);
  });

  test("execute_code under a policy the backend cannot run is a tool error naming the fix", async () => {
    const r = await getClient().callTool({ name: "execute_code", arguments: { code: "print(1)", policy: "python-gvisor" } });
    assert.equal(r.isError, true);
    assert.match(text(r), /not runnable here/);
    assert.match(text(r), /--backend docker/);
  });

  test("execute_code runs print(\"hi\")", async () => {
    const r = await getClient().callTool({ name: "execute_code", arguments: { code: 'print("hi")' } });
    assert.equal(r.isError, false, text(r));
    assert.match(text(r), /^status: ok, exit code 0/);
    assert.match(text(r), /hi/);
    assert.equal(r.structuredContent.stdout, "hi\n");
    assert.equal(r.structuredContent.status, "ok");
    assert.equal(r.structuredContent.exit_code, 0);
  });

  test("an exec of /bin/sh is refused and the denied_exec alert is in the result", async () => {
    const r = await getClient().callTool({
      name: "execute_code",
      arguments: { code: "import os\nos.system('/bin/sh -c true')\nprint('after')", policy: "code-sandbox" },
    });
    assert.equal(r.isError, false, text(r));
    const alerts = r.structuredContent.alerts;
    assert.ok(alerts.some((a) => a.rule === "denied_exec"), JSON.stringify(alerts));
    assert.match(text(r), /denied_exec/);
    assert.match(text(r), /after/);
  });

  test("an unknown policy is a tool error the model can read", async () => {
    const r = await getClient().callTool({ name: "execute_code", arguments: { code: "print(1)", policy: "no-such-policy" } });
    assert.equal(r.isError, true);
    assert.match(text(r), /no-such-policy/);
  });

  test("list_policies names each policy with its description", async () => {
    const r = await getClient().callTool({ name: "list_policies", arguments: {} });
    assert.equal(r.isError, false, text(r));
    const names = r.structuredContent.policies.map((p) => p.name);
    assert.ok(names.includes("code-sandbox"), names.join(","));
    assert.match(text(r), /code-sandbox \(default\)/);
  });

  test("a session keeps a variable across two calls, then closes", async () => {
    const c = getClient();
    const created = await c.callTool({ name: "session_create", arguments: { policy: "code-sandbox" } });
    assert.equal(created.isError, false, text(created));
    const id = created.structuredContent.session_id;
    assert.match(text(created), new RegExp(id));
    const a = await c.callTool({ name: "session_execute", arguments: { session_id: id, code: "x = 41" } });
    assert.equal(a.isError, false, text(a));
    const b = await c.callTool({ name: "session_execute", arguments: { session_id: id, code: "print(x + 1)" } });
    assert.equal(b.isError, false, text(b));
    assert.equal(b.structuredContent.stdout.trim(), "42");
    const closed = await c.callTool({ name: "session_close", arguments: { session_id: id } });
    assert.equal(closed.isError, false, text(closed));
    const gone = await c.callTool({ name: "session_execute", arguments: { session_id: id, code: "print(x)" } });
    assert.equal(gone.isError, true);
    assert.match(text(gone), /not_found/);
  });

  test("an unknown tool is a JSON-RPC invalid-params error", async () => {
    await assert.rejects(getClient().callTool({ name: "no_such_tool", arguments: {} }), (e) => e.code === -32602);
  });

  test("ping answers", async () => {
    assert.deepEqual(await getClient().ping(), {});
  });
}
