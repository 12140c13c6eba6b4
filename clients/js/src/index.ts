/**
 * @llm-sandbox/client: run code written by LLM agents in disposable sandboxes through
 * `llm-sandbox serve`. The LangChain.js and LlamaIndex.TS tools live in the subpath exports
 * "@llm-sandbox/client/langchain" and "@llm-sandbox/client/llamaindex", so importing this entry
 * never needs those frameworks.
 */
export { SandboxClient, DEFAULT_POLICY, DEFAULT_URL, isBatchError, type ClientOptions } from "./client.js";
export { Session, type ArchiveWritten, type ForkedSessions } from "./session.js";
export { EVENT_STREAM_MS, type StreamedEvent } from "./events.js";
export { ExecutionHandle, LONG_POLL_S } from "./handle.js";
export { archiveEntry, packDir, unpackTar, DEFAULT_IGNORE } from "./workspace.js";
export { outputBytes } from "./output.js";
export { SSEParser, type SSEMessage } from "./sse.js";
export * from "./errors.js";
export type * from "./types.js";
export { VERSION } from "./version.js";
export {
  clip, describePolicies, errorForModel, formatResult, resolvePolicies, runForTool, toolJsonSchema,
  type ToolInput, type ToolPolicy, type SandboxToolOptions,
  type ResolvedToolConfig,
} from "./tool.js";
