// node_driver.js: a node session's persistent context, run as the policy's node runs a script
// (scheduler/driver/repl_driver.h has the wire). Each execute's code runs as a script in one vm
// context: globals, `var`, functions and top-level `let`/`const`/`class` stay for the next (a
// second `let` of the same name is a SyntaxError, as in one script). Code with a top-level `await`
// runs in an async function instead: its own declarations end with it (assign to globalThis).
// A returned Promise is awaited; an uncaught error prints its stack to stderr, status 1.
// Wire (stdin): the marker line; then per execute "X <code bytes> <stdin bytes>\n" code stdin.
// Answer: "\x1e<marker>:<status>\n" on stdout, "\x1e<marker>\n" on stderr. process.stdin in the
// code reads the request's stdin data (reading fd 0 itself would read the wire).
'use strict';
const vm = require('vm');
const { Readable } = require('stream');

const wire = process.stdin;
let stdinData = Buffer.alloc(0);
let stdinStream = null;  // made on the execute's first use of process.stdin
Object.defineProperty(process, 'stdin', {
  configurable: true,
  get: () => stdinStream || (stdinStream = Readable.from(stdinData.length ? [stdinData] : [])),
});

// A fresh context with the main context's globals (console, process, timers, Buffer...) and
// require, as node's REPL builds one: the code's own globals never reach the driver's.
function newContext() {
  const ctx = vm.createContext({});
  const builtins = new Set(vm.runInContext('Object.getOwnPropertyNames(globalThis)', ctx));
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    // The context's own console is V8's, which prints nowhere.
    if (builtins.has(name) && name !== 'console') continue;
    const d = Object.getOwnPropertyDescriptor(globalThis, name);
    if (d) Object.defineProperty(ctx, name, d);
  }
  ctx.require = require;
  ctx.module = module;
  ctx.exports = module.exports;
  ctx.__filename = '<session>';
  ctx.__dirname = process.cwd();
  return ctx;
}
const context = newContext();

function compile(code) {
  try {
    return new vm.Script(code, { filename: '<session>' });
  } catch (e) {
    // A top-level await (`await x`, `for await`): the REPL's way, an async function around the
    // code. When that does not compile either, the script's own error is the one to report.
    if (!(e instanceof SyntaxError) || !/\bawait\b/.test(code)) throw e;
    try {
      return new vm.Script('(async () => {\n' + code + '\n})()', { filename: '<session>', lineOffset: -1 });
    } catch {
      throw e;
    }
  }
}

// The error's stack without the driver's own frames (the code's are "<session>").
function report(e) {
  const text = e && typeof e === 'object' && typeof e.stack === 'string' ? e.stack : 'Uncaught ' + String(e);
  const ours = (line) => /^\s+at /.test(line) && /\(node:|\[eval\]|lsb_node_driver/.test(line);
  process.stderr.write(text.split('\n').filter((line) => !ours(line)).join('\n') + '\n');
}

// Errors of callbacks the code left running (timers, promises) are reported, not fatal.
process.on('uncaughtException', report);
process.on('unhandledRejection', report);

async function execute(code) {
  try {
    const value = compile(code).runInContext(context, { displayErrors: false });
    if (value && typeof value.then === 'function') await value;
    return 0;
  } catch (e) {
    report(e);
    return 1;
  }
}

let marker = null;
let buf = Buffer.alloc(0);
let busy = false;
let ended = false;  // the wire's end: the driver exits once its messages are done

// The next complete message of `buf`, or null.
function nextMessage() {
  const nl = buf.indexOf(10);
  if (nl < 0) return null;
  const head = buf.subarray(0, nl).toString('latin1');
  if (marker === null) {
    marker = head;
    buf = buf.subarray(nl + 1);
    return nextMessage();
  }
  const m = /^X (\d+) (\d+)$/.exec(head);
  if (!m) {
    process.stderr.write('node driver: a bad message header\n');
    process.exit(70);
  }
  const nCode = Number(m[1]), nIn = Number(m[2]);
  if (buf.length < nl + 1 + nCode + nIn) return null;
  const code = buf.subarray(nl + 1, nl + 1 + nCode).toString('utf8');
  const input = Buffer.from(buf.subarray(nl + 1 + nCode, nl + 1 + nCode + nIn));
  buf = buf.subarray(nl + 1 + nCode + nIn);
  return { code, input };
}

async function pump() {
  if (busy) return;
  busy = true;
  for (let msg = nextMessage(); msg; msg = nextMessage()) {
    stdinData = msg.input;
    stdinStream = null;
    const status = await execute(msg.code);
    process.stdout.write('\x1e' + marker + ':' + status + '\n');
    process.stderr.write('\x1e' + marker + '\n');
  }
  busy = false;
  if (ended) process.exit(0);
}

wire.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  pump();
});
wire.on('end', () => {
  ended = true;
  if (!busy) process.exit(0);
});
