/**
 * The tool description names a built environment's packages (GET /v1/policies `packages` and
 * `apt_packages`, docs/api.md "Built environments"), cut after 40 of each. The listing comes from a
 * small real HTTP server on loopback (node:http) that answers GET /v1/policies as a daemon with a
 * built policy does (tests/docker/test_docker_build.py checks that answer against the real daemon).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SandboxClient, resolvePolicies } from "@llm-sandbox/client";

const many = Array.from({ length: 45 }, (_, i) => `pkg${i} 1.${i}`);
const listing = {
  policies: [
    { name: "built", description: "Data analysis", backend: "native", network: false, languages: ["python"],
      runnable: true, packages: ["tinypkg 1.0", "numpy 1.24.2"], apt_packages: ["git 1:2.39.5-0+deb12u2"] },
    { name: "big", description: "", backend: "native", network: true, languages: ["python"], runnable: true,
      packages: many },
    { name: "plain", description: "Untrusted snippets", backend: "native", network: false, languages: ["python"],
      runnable: true },
  ],
};

describe("tool description of built environments", () => {
  let server: Server;
  let client: SandboxClient;
  before(async () => {
    server = createServer((req, res) => {
      const body = req.url === "/v1/policies" ? JSON.stringify(listing) : JSON.stringify({ error: { code: "not_found" } });
      res.writeHead(req.url === "/v1/policies" ? 200 : 404, { "Content-Type": "application/json" });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    client = new SandboxClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
  after(() => server.close());

  test("installed and system packages are named; a policy without a build names none", async () => {
    const cfg = await resolvePolicies({ client });
    const by = new Map(cfg.policies.map((p) => [p.name, p.description]));
    assert.equal(by.get("built"), "Data analysis (languages: python; network off; installed packages: tinypkg 1.0, " +
      "numpy 1.24.2; system packages: git 1:2.39.5-0+deb12u2)");
    assert.equal(by.get("plain"), "Untrusted snippets (languages: python; network off)");
    assert.match(cfg.description, /- built \(default\): Data analysis .*system packages: git/);
  });

  test("a long list is cut after 40, saying how many more", async () => {
    const cfg = await resolvePolicies({ client, policies: ["big"] });
    const text = cfg.policies[0].description;
    assert.ok(text.startsWith("general-purpose sandbox (languages: python; network on; installed packages: pkg0 1.0, "), text);
    assert.ok(text.includes("pkg39 1.39 and 5 more)"), text);
    assert.ok(!text.includes("pkg40"), text);
  });
});
