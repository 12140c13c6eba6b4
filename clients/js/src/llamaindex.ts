/**
 * A LlamaIndex.TS function tool that runs code in LLM Sandbox.
 *
 *   import { createSandboxFunctionTool } from "@llm-sandbox/client/llamaindex";
 *   const runCode = await createSandboxFunctionTool({ client, policies: ["python-strict"] });
 *   const workflow = agent({ llm, tools: [runCode] });   // from @llamaindex/workflow
 *
 * Same policy choice and description as the LangChain tool. Needs the peer dependency
 * llamaindex (>= 0.12), whose FunctionTool takes the JSON Schema directly.
 */
import { FunctionTool } from "llamaindex";
import { resolvePolicies, runForTool, toolJsonSchema, type ResolvedToolConfig, type SandboxToolOptions, type ToolInput } from "./tool.js";

export type SandboxFunctionTool = FunctionTool<ToolInput, Promise<string>>;

/** Builds the tool from an already resolved configuration (no request to the daemon). */
export function sandboxFunctionToolFromConfig(cfg: ResolvedToolConfig): SandboxFunctionTool {
  return new FunctionTool<ToolInput, Promise<string>>(
    (input: ToolInput) => runForTool(cfg, input),
    { name: cfg.name, description: cfg.description, parameters: toolJsonSchema(cfg) as never },
  );
}

/** Fetches the daemon's policies, keeps the allowed ones and builds the tool. */
export async function createSandboxFunctionTool(opts: SandboxToolOptions): Promise<SandboxFunctionTool> {
  return sandboxFunctionToolFromConfig(await resolvePolicies(opts));
}
