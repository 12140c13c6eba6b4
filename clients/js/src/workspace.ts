/**
 * Directories to and from a box: a local tree packed as one tar.gz (`uploadDir`, an inline
 * `archive_base64` file entry) and a tar from the daemon unpacked safely (`downloadDir`).
 *
 * The daemon refuses symbolic links in archives (docs/api.md "Archives"): packing sends a link
 * whose target lies inside the tree as the file it points to and leaves every other link out.
 * Unpacking refuses absolute names, "..", links and special entries.
 */
import { lstatSync, mkdirSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync, chmodSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";

/** Names left out of uploadDir unless `ignore` is given. */
export const DEFAULT_IGNORE: readonly string[] = [
  ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".tox", "*.pyc",
];

// A glob of * and ? against a whole name or relative path.
function globMatch(pattern: string, s: string): boolean {
  const re = new RegExp("^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$");
  return re.test(s);
}

const BLOCK = 512;

function header(name: string, type: string, size: number, mode: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  const enc = new TextEncoder();
  let short = enc.encode(name);
  if (short.length > 100) {
    // A pax header carries the long name; the ustar field gets a stand-in.
    let rec = ` path=${name}\n`;
    let len = enc.encode(rec).length + 1;
    while (String(len).length + enc.encode(rec).length !== len) len++;
    const pax = enc.encode(`${len}${rec}`);
    parts.push(...header("PaxHeaders/long", "x", pax.length, 0o644), pad(pax));
    short = short.slice(0, 100);
  }
  const h = new Uint8Array(BLOCK);
  const put = (at: number, s: string) => h.set(enc.encode(s), at);
  h.set(short, 0);
  put(100, mode.toString(8).padStart(7, "0"));
  put(108, "0000000");
  put(116, "0000000");
  put(124, size.toString(8).padStart(11, "0"));
  put(136, "00000000000");
  put(156, type);
  put(257, "ustar\u000000");
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  put(148, sum.toString(8).padStart(6, "0") + "\u0000 ");
  parts.push(h);
  return parts;
}

function pad(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(data.length / BLOCK) * BLOCK);
  out.set(data);
  return out;
}

/** The tree under `local` as tar.gz bytes, names relative to it. */
export function packDir(local: string, ignore: readonly string[] = DEFAULT_IGNORE): Uint8Array {
  const root = realpathSync(local);
  if (!statSync(root).isDirectory()) throw new TypeError(`uploadDir: ${local} is not a directory`);
  const parts: Uint8Array[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      const rel = relative(root, full).split(sep).join("/");
      if (ignore.some((p) => globMatch(p, name) || globMatch(p, rel))) continue;
      const l = lstatSync(full);
      if (l.isDirectory()) {
        parts.push(...header(rel + "/", "5", 0, 0o755));
        walk(full);
        continue;
      }
      let real = full;
      if (l.isSymbolicLink()) {
        try { real = realpathSync(full); } catch { continue; }
        if (!real.startsWith(root + sep) || !statSync(real).isFile()) continue;  // a link out: left out
      } else if (!l.isFile()) {
        continue;  // FIFOs, sockets, devices
      }
      const data = readFileSync(real);
      const mode = statSync(real).mode & 0o111 ? 0o755 : 0o644;
      parts.push(...header(rel, "0", data.length, mode), pad(data));
    }
  };
  walk(root);
  parts.push(new Uint8Array(2 * BLOCK));
  return gzipSync(Buffer.concat(parts));
}

/** An execute/batch `files` entry that unpacks `local` under `remote` in the box. */
export function archiveEntry(remote: string, local: string, ignore?: readonly string[]): { path: string; archive_base64: string } {
  return { path: remote, archive_base64: Buffer.from(packDir(local, ignore)).toString("base64") };
}

function field(h: Uint8Array, at: number, n: number): string {
  const end = h.subarray(at, at + n).indexOf(0);
  return new TextDecoder().decode(h.subarray(at, end < 0 ? at + n : at + end));
}

/** Writes the directories and regular files of a tar under `local`; returns the files written. */
export function unpackTar(tar: Uint8Array, local: string): string[] {
  const bytes = tar.length >= 2 && tar[0] === 0x1f && tar[1] === 0x8b ? new Uint8Array(gunzipSync(tar)) : tar;
  mkdirSync(local, { recursive: true });
  const root = realpathSync(local);
  const written: string[] = [];
  let at = 0;
  let paxPath: string | undefined;
  while (at + BLOCK <= bytes.length) {
    const h = bytes.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) break;
    const size = parseInt(field(h, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(h[156] || 48);
    const data = bytes.subarray(at + BLOCK, at + BLOCK + size);
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (type === "x") {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(new TextDecoder().decode(data));
      paxPath = m ? m[1] : undefined;
      continue;
    }
    const prefix = field(h, 345, 155);
    let name = paxPath ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    paxPath = undefined;
    name = name.replace(/\/+$/, "");
    const comps = name.split("/");
    if (!name || name.startsWith("/") || comps.includes("..")) throw new Error(`downloadDir: refused archive entry '${name}': it would leave ${local}`);
    const dest = join(root, ...comps);
    if (type === "5") {
      mkdirSync(dest, { recursive: true });
    } else if (type === "0" || type === "\u0000") {
      mkdirSync(dirname(dest), { recursive: true });
      if (realpathSync(dirname(dest)) !== dirname(dest)) throw new Error(`downloadDir: refused archive entry '${name}': a link on its way`);
      writeFileSync(dest, data);
      chmodSync(dest, parseInt(field(h, 100, 8).trim() || "644", 8) & 0o111 ? 0o755 : 0o644);
      written.push(dest);
    } else {
      throw new Error(`downloadDir: refused archive entry '${name}': not a file or directory`);
    }
  }
  return written;
}
