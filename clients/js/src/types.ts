/** The shapes of docs/api.md (v1), as TypeScript types. Field names are the wire's. */

/** One monitoring event: an alert or a trace entry (exec, connect...). */
export interface SandboxEvent {
  kind: string;
  severity: "info" | "warning" | "critical";
  rule: string;
  message: string;
  pid?: number;
  path?: string;
  argv?: string[];
  address?: string;
  decision?: string;
  time_ms?: number;
}

export type ExecStatus = "ok" | "error" | "timeout" | "oom" | "killed" | "denied" | "output_limit" | "reset";

/** The result of one execution. A failed, timed-out or denied program is still a result. */
export interface ExecResult {
  /** Text; U+FFFD where the program wrote bytes that are not UTF-8 (then see stdout_base64). */
  stdout: string;
  stderr: string;
  /** The exact bytes, present only when they are not valid UTF-8; outputBytes() decodes either. */
  stdout_base64?: string;
  stderr_base64?: string;
  /** 124 for a timeout (status "timeout"), 137 oom, 126 denied, 128+N killed by signal N. */
  exit_code: number;
  /** The signal that ended the program (at a timeout: 15 SIGTERM or 9 SIGKILL after the grace), or 0. */
  signal?: number;
  status: ExecStatus;
  duration_ms: number;
  cpu_ms: number;
  memory_peak_bytes: number | null;
  alerts: SandboxEvent[];
  truncated: boolean;
  execution_id: string;
  backend: string;
  policy: string;
  /**
   * What the record can be trusted for (docs/security.md, Class 9): "execution" = a fresh box ran
   * this program alone; "session" = earlier executions of the session could have forged its
   * stdout, stderr and exit code (alerts, timeouts and usage still hold). Optional: older daemons.
   */
  trust?: "execution" | "session";
  /** Present when the request had `collect`: the files returned, or why one was not. */
  collected?: CollectedFile[];
  /**
   * Rich outputs (docs/api.md "Rich outputs"): each entry maps MIME types to data ("image/png":
   * base64, "text/plain": text, ...), or is {error}. Absent when there are none.
   */
  outputs?: RichOutput[];
}

/** One rich output: MIME type -> data, or {error: why it could not be returned}. */
export type RichOutput = Record<string, unknown> & { error?: string };

/** One entry of ExecResult.collected: content (UTF-8 text), content_base64 (bytes) or error. */
export interface CollectedFile {
  path: string;
  size?: number;
  content?: string;
  content_base64?: string;
  error?: string;
}

/** A file written into the box's tmpfs before the program runs. */
export type FileEntry =
  | { path: string; content: string }
  | { path: string; content_base64: string }
  | { path: string; archive_base64: string };

/** `{"/tmp/data.csv": "a,b\n"}` (string or bytes values) or the API's own list form. */
export type FilesArg = Record<string, string | Uint8Array> | FileEntry[];

/** Options of a one-shot execution; unset ones keep the policy's values (limits may only go down). */
export interface ExecuteOptions {
  language?: string;
  /** Server-side policy name; defaults to the client's policy. */
  policy?: string;
  stdin?: string;
  /** Seconds; may only lower the policy's timeout. */
  timeout?: number;
  /** e.g. "128M" or bytes; may only lower the policy's memory. */
  memory?: string | number;
  cpu?: string | number;
  env?: Record<string, string>;
  files?: FilesArg;
  /** Paths or glob patterns of files returned in result.collected after the program ends. */
  collect?: string[];
  /** Abort the HTTP request (the daemon then stops the program). */
  signal?: AbortSignal;
}

/** The POST /v1/execute body. */
export interface ExecuteRequest {
  /** Exactly one of code and command. */
  code?: string;
  command?: string[];
  collect?: string[];
  language?: string;
  policy?: string;
  stdin?: string;
  timeout?: number;
  memory?: string | number;
  cpu?: string | number;
  env?: Record<string, string>;
  files?: FileEntry[];
}

export interface SessionExecuteOptions {
  collect?: string[];
  stdin?: string;
  timeout?: number;
  env?: Record<string, string>;
  signal?: AbortSignal;
}

export interface SessionOptions {
  policy?: string;
  language?: string;
  /** Seconds without an execution before the daemon closes the session (default 300). */
  idle_timeout?: number;
  /** Seconds the session may live at most (default 3600). */
  max_lifetime?: number;
  /** Python run once when the interpreter starts; `Session.reset()` returns to the state after it. */
  setup?: string;
  /** Keep a baseline of the writable dirs so `Session.changes()` can return the change set. */
  changes?: boolean;
}

/** One entry of the file-system API (docs/api.md "File-system API"). */
export interface FsEntry {
  name: string;
  path?: string;
  type: "file" | "dir" | "symlink" | "fifo" | "socket" | "char" | "block";
  size: number;
  /** Permission bits (07777). */
  mode: number;
  mtime_ms: number;
  /** A symlink's target (never followed). */
  target?: string;
}

/** GET /v1/sessions/{id}/fs/list. */
export interface FsListing {
  path: string;
  entries: FsEntry[];
  truncated: boolean;
  total: number;
  message?: string;
}

/** A change set (docs/api.md "Change sets"): what changed, and a patch `git apply` takes. */
export interface ChangeSet {
  root: string;
  files: Array<{ path: string; change: string; kind: string; [key: string]: unknown }>;
  patch: string;
  complete?: boolean;
  [key: string]: unknown;
}

export interface SessionInfo {
  session_id: string;
  policy: string;
  language: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
  executions: number;
  state: "ready" | "busy" | "closed" | "paused";
  /** How long the setup took when the interpreter last started (null: not python). */
  setup_ms?: number | null;
  resets?: number;
  snapshots?: number;
}

/** What POST /v1/sessions/{id}/reset answers: the session and what the reset did. */
export interface SessionResetInfo extends SessionInfo {
  reset: { mode: "interpreter" | "new_box"; duration_ms: number; duration_us: number; why?: string;
           snapshot_lost?: boolean };
}

/** POST /v1/sessions/{id}/fork's account of what the children got from the parent. */
export interface ForkReport {
  parent: string;
  mechanism: string;
  carried: { globals: string[]; modules: string[]; file_bytes: number };
  not_carried: { globals: string[]; not_loaded: string[]; processes: string; unpicklable: string };
  save_ms: number;
  warm_children: number;
  duration_ms: number;
  queued?: unknown;
  [key: string]: unknown;
}

/** What POST /v1/sessions/{id}/pause answers. */
export interface PauseInfo {
  session_id: string;
  state: "paused";
  pause: { bytes: number; duration_ms: number; not_kept: string };
}

/** What POST /v1/sessions/{id}/resume answers: the session and what came back. */
export interface SessionResumeInfo extends SessionInfo {
  resume: { paused_at: string; carried: { globals: string[]; modules: string[] };
            not_carried: { globals: string[]; not_loaded: string[] }; not_kept: string; duration_ms: number };
}

/** GET /v1/executions: the caller's running and recent executions (monitoring views). */
export interface ExecutionsView { running: Record<string, unknown>[]; recent: Record<string, unknown>[] }

/** GET /v1/history: a page of the audit log; pass next_cursor back as `cursor`. */
export interface HistoryPage {
  executions: Record<string, unknown>[];
  next_cursor: string | null;
  scanned_bytes: number;
  skipped_lines: number;
  cursor_expired: boolean;
}

/** Filters of the monitoring views (the daemon checks the values: unknown ones are 400). */
export interface ExecutionFilter { limit?: number; policy?: string; status?: string; rule?: string }

/** A policy as listed by GET /v1/policies. */
export interface PolicySummary {
  name: string;
  description: string;
  backend: string;
  network: boolean;
  languages: string[];
  default?: boolean;
  /** false when the daemon's backend cannot run it (executes under it are refused with 400). */
  runnable?: boolean;
  /** Only when runnable is false: what the backend cannot do, and a "fix:" line. */
  reason?: string;
  /** container.build, once built: "NAME VERSION" of each package its python sees. */
  packages?: string[];
  /** container.build, once built: "NAME VERSION" of each build.apt Debian package. */
  apt_packages?: string[];
}

/** GET /v1/policies/{name}: the resolved policy and how each control is enforced. */
export interface PolicyDetail {
  name: string;
  policy: Record<string, unknown>;
  explain: Array<{ control: string; native: string; docker: string }>;
}

/** A batch task: code, or an execute body (its policy defaults to the client's). */
export type BatchTask = string | (Omit<ExecuteRequest, "files"> & { files?: FilesArg });

/** One entry of a batch answer: a result, or the error of a task the daemon refused. */
export type BatchEntry = ExecResult | { error: { code: string; message: string } };

/** One event of a streamed execution; "result" is always last. */
export type StreamEvent =
  /** `bytes`: the exact output (decoded from data_base64 when it is not UTF-8). */
  | { kind: "stdout"; data: string; bytes: Uint8Array }
  | { kind: "stderr"; data: string; bytes: Uint8Array }
  | { kind: "alert"; data: SandboxEvent }
  | { kind: "result"; data: ExecResult }
  | { kind: string; data: unknown };

/** An asynchronous execution's state (GET /v1/executions/{id}, docs/api.md "Asynchronous executions"). */
export interface ExecutionState {
  execution_id: string;
  policy: string;
  kind: string;
  async?: boolean;
  state: "queued" | "running" | "finished";
  submitted_at?: string;
  finished_at?: string;
  /** The result, once finished. */
  result?: ExecResult;
  /** Set instead of `result` when the daemon could not run it. */
  error?: { code: string; message: string };
}
