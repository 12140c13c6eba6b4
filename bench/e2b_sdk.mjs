// The E2B SDK's half of bench/e2b_front_door: runCode("1+1") and commands.run("python3 -c
// 'print(1)'") against the daemon the caller started (E2B_API_URL/E2B_SANDBOX_URL/E2B_API_KEY set),
// with the SDKs installed by tests/e2b (npm ci). Prints one JSON line of per-call milliseconds.
import { resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox } = await import(pathToFileURL(resolve(root, "tests/e2b/node_modules/@e2b/code-interpreter/dist/index.mjs")));
const runs = Number(process.argv[2] ?? 20);
const sbx = await Sandbox.create({ timeoutMs: 600_000 });
const time = async (fn) => {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
};
const out = { run_code: [], command: [] };
await sbx.runCode("1+1");  // warm: the interpreter is up
for (let i = 0; i < runs; i++) out.run_code.push(await time(async () => {
  const e = await sbx.runCode("1+1");
  if (e.text !== "2") throw new Error(`runCode answered ${e.text}`);
}));
for (let i = 0; i < runs; i++) out.command.push(await time(async () => {
  const r = await sbx.commands.run("python3 -c 'print(1)'");
  if (r.stdout !== "1\n") throw new Error(`command answered ${r.stdout}`);
}));
await sbx.kill();
console.log(JSON.stringify(out));
