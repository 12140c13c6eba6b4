/**
 * What the agent tools (LangChain.js, LlamaIndex.TS) share, with no framework import: which
 * policies the agent may choose from, the description that tells the model what each is for, the
 * JSON Schema of the tool's input, running a call, and turning the result into text for a model.
 *
 * The operator decides the allowed policies (a list of names, or every policy the daemon has);
 * the model picks one per call from that enum, guided by the policies' descriptions from
 * GET /v1/policies. A name outside the list is refused before any request is sent.
 */
import type { SandboxClient } from "./client.js";
import {
  BadRequest, Conflict, ConnectionFailed, Forbidden, NotFound, PayloadTooLarge, ProtocolError,
  RateLimited, SandboxError, SandboxFailure, ServerError, Unauthorized, Unavailable,
} from "./errors.js";
import type { ExecResult, PolicySummary, RichOutput } from "./types.js";

/** One policy as the tool offers it to the model. */
export interface ToolPolicy {
  name: string;
  /** What the policy is for, in words a model can act on. */
  description: string;
  languages: string[];
  network: boolean;
}

export interface SandboxToolOptions {
  /** The client the tool runs code through. */
  client: SandboxClient;
  /**
   * Policy names the agent may choose from, in order of preference (the first is the default).
   * Default: every policy the daemon can run (GET /v1/policies `runnable`). Each must exist on the
   * daemon and be runnable there (a TypeError with the daemon's reason otherwise).
   */
  policies?: string[];
  /** Operator's own words for a policy, replacing the daemon's description in the tool text. */
  descriptions?: Record<string, string>;
  /** Policy used when the model names none (default: the first allowed one). */
  defaultPolicy?: string;
  /** Tool name shown to the model (default "run_code"). */
  name?: string;
  /** Upper bound of a call's wall time, seconds (may only lower the policy's). */
  timeout?: number;
  /** Longest stdout or stderr passed back to the model, in characters (default 8000). */
  maxOutputChars?: number;
}

/** The policy choice resolved against the daemon; build a tool from it synchronously. */
export interface ResolvedToolConfig {
  client: SandboxClient;
  name: string;
  policies: ToolPolicy[];
  defaultPolicy: string;
  languages: string[];
  description: string;
  timeout?: number;
  maxOutputChars: number;
}

/** The arguments a model sends to the tool. */
export interface ToolInput {
  code: string;
  policy?: string;
  language?: string;
}

/** Falls back to a description built from the policy's facts when the YAML has none. */
function describe(p: PolicySummary, override?: string): string {
  const text = (override ?? p.description ?? "").trim();
  let facts = `languages: ${p.languages?.length ? p.languages.join(", ") : "python"}; network ${p.network ? "on" : "off"}`;
  // container.build: what the environment has (GET /v1/policies), so the model knows what it can
  // import and run; a long list is cut, saying how many more there are.
  for (const [list, label] of [[p.packages, "installed packages"], [p.apt_packages, "system packages"]] as const) {
    if (!list?.length) continue;
    facts += `; ${label}: ${list.slice(0, 40).join(", ")}${list.length > 40 ? ` and ${list.length - 40} more` : ""}`;
  }
  return text ? `${text} (${facts})` : `general-purpose sandbox (${facts})`;
}

/**
 * Fetches GET /v1/policies and keeps the allowed ones. An allowed name the daemon does not have
 * is an error that names it: an operator's typo must not silently widen or empty the choice.
 */
export async function resolvePolicies(opts: SandboxToolOptions): Promise<ResolvedToolConfig> {
  const listed = await opts.client.policies();
  const byName = new Map(listed.map((p) => [p.name, p]));
  // A policy the daemon's backend cannot run (runnable: false) is never offered: every call under
  // it would be refused. An older daemon without the field runs them all.
  const runnable = listed.filter((p) => p.runnable !== false).map((p) => p.name);
  const wanted = opts.policies ?? runnable;
  if (wanted.length === 0) throw new TypeError("the tool needs at least one allowed policy");
  const missing = wanted.filter((n) => !byName.has(n));
  if (missing.length) {
    throw new NotFound(`allowed policy ${missing.map((m) => JSON.stringify(m)).join(", ")} is not on the daemon ` +
      `(it has: ${[...byName.keys()].join(", ")}); fix the tool's 'policies' option`);
  }
  const notRunnable = wanted.filter((n) => !runnable.includes(n));
  if (notRunnable.length) {
    const reasons = notRunnable.map((n) => `${n}: ${byName.get(n)!.reason ?? "not runnable"}`).join("; ");
    throw new TypeError(`allowed policy ${notRunnable.map((m) => JSON.stringify(m)).join(", ")} cannot run on this ` +
      `daemon's backend (${reasons}); remove it from the tool's 'policies' option or run the daemon where it can run`);
  }
  const policies = wanted.map((n) => {
    const p = byName.get(n)!;
    return { name: n, description: describe(p, opts.descriptions?.[n]), languages: p.languages ?? [], network: !!p.network };
  });
  const defaultPolicy = opts.defaultPolicy ?? policies[0].name;
  if (!policies.some((p) => p.name === defaultPolicy)) {
    throw new TypeError(`defaultPolicy ${JSON.stringify(defaultPolicy)} is not among the allowed policies`);
  }
  const name = opts.name ?? "run_code";
  const languages = [...new Set(policies.flatMap((p) => p.languages))];
  return {
    client: opts.client, name, policies, defaultPolicy, languages,
    description: describePolicies(policies, defaultPolicy), timeout: opts.timeout,
    maxOutputChars: opts.maxOutputChars ?? 8000,
  };
}

/** The tool description: what it does, what comes back, and what each policy is for. */
export function describePolicies(policies: ToolPolicy[], defaultPolicy: string): string {
  const lines = [
    "Run code in an isolated, disposable sandbox and get back its stdout, stderr, exit status and any security alerts.",
    "Each call starts from a clean box: files and variables do not persist between calls. Print what you need to see.",
    "Choose the `policy` by what the code needs:",
    ...policies.map((p) => `- ${p.name}${p.name === defaultPolicy ? " (default)" : ""}: ${p.description}`),
  ];
  return lines.join("\n");
}

/** The tool's input as JSON Schema (what LangChain.js and LlamaIndex.TS both accept). */
export function toolJsonSchema(cfg: ResolvedToolConfig): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    code: { type: "string", description: "The complete program to run. Its output must be printed to be seen." },
    policy: {
      type: "string", enum: cfg.policies.map((p) => p.name),
      description: `Which sandbox policy to run under (default ${cfg.defaultPolicy}); see the tool description for what each is for.`,
    },
  };
  if (cfg.languages.length > 1) {
    properties.language = {
      type: "string", enum: cfg.languages,
      description: "The program's language, when the policy runs more than one (default: the policy's own).",
    };
  }
  return { type: "object", properties, required: ["code"], additionalProperties: false };
}

/** Cuts a long text in the middle, saying how much was cut, so a model's context is not flooded. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.ceil(max * 0.7);
  const tail = max - head;
  return `${text.slice(0, head)}\n[... ${text.length - max} characters cut ...]\n${tail > 0 ? text.slice(-tail) : ""}`;
}

/** The result as plain text for a model: status line, stdout, stderr, alerts. */
export function formatResult(r: ExecResult, maxOutputChars = 8000): string {
  const ms = typeof r.duration_ms === "number" ? `, ${r.duration_ms} ms` : "";
  const parts = [`status: ${r.status} (exit code ${r.exit_code}${ms}, policy ${r.policy})`];
  if (r.status === "timeout") parts.push("note: the program was killed at its time limit.");
  if (r.status === "oom") parts.push("note: the program ran out of memory and was killed.");
  if (r.status === "denied") parts.push("note: the policy did not allow something the program tried to do (see alerts).");
  if (r.truncated) parts.push("note: the output was longer than the policy allows and was truncated.");
  parts.push(`stdout:\n${r.stdout ? clip(r.stdout, maxOutputChars) : "(empty)"}`);
  if (r.stderr) parts.push(`stderr:\n${clip(r.stderr, maxOutputChars)}`);
  if (r.alerts?.length) {
    parts.push("alerts:\n" + r.alerts.map((a) => `- [${a.severity}] ${a.rule || a.kind}: ${a.message}`).join("\n"));
  }
  return parts.join("\n");
}

/**
 * Errors a model can act on (a wrong request, a policy limit, a busy daemon) come back as text so
 * the agent can adapt; errors only the operator can fix (no daemon, bad token, a daemon bug) are
 * thrown so they are not hidden inside a conversation.
 */
export function errorForModel(err: unknown): string {
  if (err instanceof Unauthorized || err instanceof ConnectionFailed || err instanceof ProtocolError
      || (err instanceof ServerError && !(err instanceof SandboxFailure))) {
    throw err;
  }
  if (err instanceof RateLimited || err instanceof Unavailable) {
    const after = err.retryAfter !== undefined ? ` Retry after ${err.retryAfter} s.` : "";
    return `error: the sandbox service is busy (${err.code}): ${err.message}.${after}`;
  }
  if (err instanceof Forbidden) return `error: the policy does not allow this request (forbidden): ${err.message}`;
  if (err instanceof PayloadTooLarge) return `error: the code or its files are too large (payload_too_large): ${err.message}`;
  if (err instanceof Conflict) return `error: the sandbox is busy with another run (conflict): ${err.message}`;
  if (err instanceof BadRequest || err instanceof NotFound) return `error: the request was rejected (${err.code}): ${err.message}`;
  if (err instanceof SandboxFailure) return `error: the sandbox itself failed (sandbox_error): ${err.message}`;
  if (err instanceof SandboxError) return `error (${err.code}): ${err.message}`;
  throw err;
}

/** An image a program displayed (a matplotlib figure, a value's _repr_png_), for the model. */
export interface ToolImage {
  mimeType: "image/png" | "image/jpeg";
  /** base64, as the daemon returned it */
  data: string;
}

/** What one tool call gives the model: the text, and the images among the rich outputs. */
export interface ToolReply {
  text: string;
  images: ToolImage[];
}

/**
 * The images of a result's rich outputs, and the text the other entries add (text/plain, errors).
 * `attached`: the framework hands the images to the model (LangChain content blocks); false: the
 * text says an image was made but is not shown (LlamaIndex's tool results are text only).
 */
export function outputsForModel(outputs: RichOutput[] | undefined, maxOutputChars = 8000, attached = true): ToolReply {
  const images: ToolImage[] = [];
  const lines: string[] = [];
  for (const [i, o] of (outputs ?? []).entries()) {
    if (typeof o?.error === "string") {
      lines.push(`[${i}] error: ${o.error}`);
      continue;
    }
    let image = false;
    for (const mimeType of ["image/png", "image/jpeg"] as const) {
      const data = o?.[mimeType];
      if (typeof data === "string" && data !== "" && !image) {
        images.push({ mimeType, data });
        image = true;
      }
    }
    const note = !image ? "" : attached ? " (image attached)" : ` (${images.at(-1)!.mimeType} image, not shown: this tool returns text only)`;
    const plain = o?.["text/plain"];
    if (typeof plain === "string") lines.push(`[${i}]${note} ${clip(plain, maxOutputChars)}`);
    else if (image) lines.push(`[${i}]${note}`);
  }
  return { text: lines.length ? `outputs:\n${lines.join("\n")}` : "", images };
}

/** Runs one tool call: checks the policy choice, executes, formats; images kept apart. */
export async function runForToolReply(cfg: ResolvedToolConfig, input: ToolInput, signal?: AbortSignal,
                                      attached = true): Promise<ToolReply> {
  const policy = input.policy ?? cfg.defaultPolicy;
  if (!cfg.policies.some((p) => p.name === policy)) {
    return { text: `error: policy ${JSON.stringify(policy)} is not available to you; choose one of: ${cfg.policies.map((p) => p.name).join(", ")}`, images: [] };
  }
  if (typeof input.code !== "string" || input.code.trim() === "") return { text: "error: `code` must be a non-empty program", images: [] };
  try {
    const result = await cfg.client.execute(input.code, {
      policy, language: input.language, timeout: cfg.timeout, signal,
    });
    const outs = outputsForModel(result.outputs, cfg.maxOutputChars, attached);
    const text = formatResult(result, cfg.maxOutputChars);
    return { text: outs.text ? `${text}\n${outs.text}` : text, images: outs.images };
  } catch (err) {
    return { text: errorForModel(err), images: [] };
  }
}

/** Runs one tool call as text only (images named in the text, not attached). */
export async function runForTool(cfg: ResolvedToolConfig, input: ToolInput, signal?: AbortSignal): Promise<string> {
  return (await runForToolReply(cfg, input, signal, false)).text;
}
