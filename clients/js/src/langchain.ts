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
import { resolvePolicies, runForToolReply, toolJsonSchema, type ResolvedToolConfig, type SandboxToolOptions, type ToolInput, type ToolReply } from "./tool.js";

/**
 * The tool message's content: the text alone, or, when the program displayed images (matplotlib
 * figures, a value's _repr_png_), LangChain's standard content blocks: the text, then one
 * {type: "image", mimeType, data} block per image, which the chat model integrations pass to
 * models that take images.
 */
export function toolContent(reply: ToolReply): string | Array<Record<string, unknown>> {
  if (reply.images.length === 0) return reply.text;
  return [{ type: "text", text: reply.text },
    ...reply.images.map((im) => ({ type: "image", mimeType: im.mimeType, data: im.data }))];
}

/** Builds the tool from an already resolved configuration (no request to the daemon). */
export function sandboxToolFromConfig(cfg: ResolvedToolConfig): DynamicStructuredTool {
  return new DynamicStructuredTool({
    name: cfg.name,
    description: cfg.description,
    schema: toolJsonSchema(cfg) as never,
    func: async (input: unknown, _runManager?: unknown, config?: { signal?: AbortSignal }) =>
      toolContent(await runForToolReply(cfg, input as ToolInput, config?.signal)),
  });
}

/** Fetches the daemon's policies, keeps the allowed ones and builds the tool. */
export async function createSandboxTool(opts: SandboxToolOptions): Promise<DynamicStructuredTool> {
  return sandboxToolFromConfig(await resolvePolicies(opts));
}
