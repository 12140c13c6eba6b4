/**
 * A LangChain.js tool that runs code in LLM Sandbox.
 *
 *   import { createSandboxTool } from "@llm-sandbox/client/langchain";
 *   const runCode = await createSandboxTool({ client, policies: ["python-strict", "bash-tools"] });
 *   const agent = createAgent({ model, tools: [runCode] });
 *
 * The tool's schema lets the model choose among the policies the operator allowed; its
 * description says what each one is for. Needs the peer dependency @langchain/core (>= 1.0).
 */
import { DynamicStructuredTool } from "@langchain/core/tools";
import { resolvePolicies, runForTool, toolJsonSchema, type ResolvedToolConfig, type SandboxToolOptions, type ToolInput } from "./tool.js";

/** Builds the tool from an already resolved configuration (no request to the daemon). */
export function sandboxToolFromConfig(cfg: ResolvedToolConfig): DynamicStructuredTool {
  return new DynamicStructuredTool({
    name: cfg.name,
    description: cfg.description,
    schema: toolJsonSchema(cfg) as never,
    func: async (input: unknown, _runManager?: unknown, config?: { signal?: AbortSignal }) =>
      runForTool(cfg, input as ToolInput, config?.signal),
  });
}

/** Fetches the daemon's policies, keeps the allowed ones and builds the tool. */
export async function createSandboxTool(opts: SandboxToolOptions): Promise<DynamicStructuredTool> {
  return sandboxToolFromConfig(await resolvePolicies(opts));
}
