// The E2B SDK's half of bench/peers: "time to interactive" as the public sandbox benchmark
// measures it, on the client's clock from Sandbox.create() to the first output of
// commands.run("python3 -c 'print(1)'"), then kill (not timed). Against the daemon the caller
// started (E2B_API_URL/E2B_SANDBOX_URL/E2B_API_KEY set), with the SDKs installed by tests/e2b.
//
// usage: node bench/e2b_burst.mjs seq N     N sandboxes one after another
//        node bench/e2b_burst.mjs burst N   N at once (Promise.all)
// Prints one JSON line: {"mode", "n", "ms": [per successful sandbox], "ok", "rate_limited",
// "errors", "error_samples", "rate_limit_samples": [up to 5 distinct messages each], "wall_ms"}.
import { resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const sdk = resolve(root, "tests/e2b/node_modules/@e2b/code-interpreter/dist/index.mjs");
const { Sandbox } = await import(pathToFileURL(sdk));
const mode = process.argv[2] ?? "seq";
const n = Number(process.argv[3] ?? 20);
const CMD = "python3 -c 'print(1)'";

const out = {
  mode, n, ms: [], ok: 0, rate_limited: 0, errors: 0, error_samples: [], rate_limit_samples: [], wall_ms: 0,
};

function rateLimited(e) {
  const s = `${e?.name ?? ""} ${e?.message ?? e}`;
  return /RateLimit|429|Too Many Requests|rate limit/i.test(s);
}

async function one() {
  const t0 = process.hrtime.bigint();
  let first = null;
  let sbx = null;
  try {
    sbx = await Sandbox.create({ timeoutMs: 300_000, requestTimeoutMs: 120_000 });
    const r = await sbx.commands.run(CMD, {
      timeoutMs: 60_000,
      requestTimeoutMs: 60_000,
      onStdout: () => { if (first === null) first = process.hrtime.bigint(); },
    });
    const t1 = first ?? process.hrtime.bigint();
    if (r.stdout !== "1\n") throw new Error(`command answered ${JSON.stringify(r.stdout)}`);
    out.ms.push(Number(t1 - t0) / 1e6);
    out.ok++;
  } catch (e) {
    const limited = rateLimited(e);
    if (limited) out.rate_limited++;
    else out.errors++;
    const msg = `${e?.name ?? "Error"}: ${String(e?.message ?? e).slice(0, 200)}`;
    const samples = limited ? out.rate_limit_samples : out.error_samples;
    if (samples.length < 5 && !samples.includes(msg)) samples.push(msg);
  } finally {
    if (sbx) await sbx.kill({ requestTimeoutMs: 60_000 }).catch(() => {});
  }
}

const w0 = process.hrtime.bigint();
if (mode === "burst") {
  await Promise.all(Array.from({ length: n }, () => one()));
} else {
  for (let i = 0; i < n; i++) await one();
}
out.wall_ms = Number(process.hrtime.bigint() - w0) / 1e6;
console.log(JSON.stringify(out));
