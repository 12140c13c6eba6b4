/**
 * The packed client (clients/js/pack.sh: tsc, then npm pack) installs into an empty project with
 * no registry and works there against the REAL daemon. npm runs with --offline, a registry
 * address nothing listens on and an empty cache of its own, and, when we are root and `unshare`
 * works, in a network namespace with no interface up: nothing can come from anywhere but the
 * tarball. The tarball is $LSB_JS_TARBALL (tests/js/run.sh sets it), else pack.sh makes it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Daemon } from "./harness.js";

const JS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function tarball(): string {
  const given = process.env.LSB_JS_TARBALL;
  if (given) return given;
  return execFileSync(join(JS_DIR, "pack.sh"), { encoding: "utf8" }).trim().split("\n").at(-1)!;
}

/** `unshare -n` as a command prefix when it works here, else nothing. */
function noNetwork(): string[] {
  if (process.getuid?.() !== 0) return [];
  const probe = spawnSync("unshare", ["-n", "true"]);
  return probe.status === 0 ? ["unshare", "-n"] : [];
}

let daemon: Daemon;
let project: string;
before(async () => {
  daemon = await Daemon.start();
  project = mkdtempSync(join(tmpdir(), "lsb-js-install-"));
});
after(async () => {
  await daemon?.stop();
  if (project) rmSync(project, { recursive: true, force: true });
});

test("npm install of the packed tarball works offline into an empty project, and the client runs", () => {
  const tgz = tarball();
  assert.ok(existsSync(tgz), tgz);
  writeFileSync(join(project, "package.json"),
    JSON.stringify({ name: "offline-probe", version: "1.0.0", private: true, type: "module" }));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toLowerCase().startsWith("npm_config_")) env[k] = v;
  Object.assign(env, { npm_config_userconfig: join(project, "no-npmrc"), npm_config_update_notifier: "false" });
  const npm = [...noNetwork(), "npm", "install", "--offline", "--no-audit", "--no-fund",
    "--cache", join(project, ".npm-cache"), "--registry", "http://127.0.0.1:9/", tgz];
  const inst = spawnSync(npm[0], npm.slice(1), { cwd: project, env, encoding: "utf8", timeout: 240_000 });
  assert.equal(inst.status, 0, `${npm.join(" ")}\n${inst.stdout}\n${inst.stderr}`);

  const installed = join(project, "node_modules", "@llm-sandbox", "client");
  const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
  for (const f of [pkg.main, pkg.types, "dist/langchain.js", "dist/llamaindex.d.ts"]) {
    assert.ok(existsSync(join(installed, f)), `${f} is in the package`);
  }
  assert.deepEqual(pkg.dependencies ?? {}, {}, "no runtime dependencies");

  // The installed package, imported by name from the project, runs code through the daemon.
  const script = `
    import { SandboxClient, VERSION } from "@llm-sandbox/client";
    const c = new SandboxClient({ baseUrl: process.argv[1] });
    const r = await c.execute("print(6 * 7)");
    console.log(JSON.stringify({ version: VERSION, stdout: r.stdout, policy: c.policy }));`;
  const run = spawnSync("node", ["--input-type=module", "-e", script, daemon.url],
    { cwd: project, encoding: "utf8", timeout: 120_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { version: pkg.version, stdout: "42\n", policy: "code-sandbox" });
  // The framework adapters need their optional peer, and say which one is missing.
  const lc = spawnSync("node", ["--input-type=module", "-e", `import "@llm-sandbox/client/langchain";`],
    { cwd: project, encoding: "utf8", timeout: 60_000 });
  assert.notEqual(lc.status, 0);
  assert.match(lc.stderr, /@langchain\/core/);
});
