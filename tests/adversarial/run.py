#!/usr/bin/env python3
"""Runs the adversarial suite on every backend present and prints / writes the matrix.

  python3 tests/adversarial/run.py                      # every backend, writes docs/security-matrix.md
  python3 tests/adversarial/run.py --backend native     # the native entry point
  python3 tests/adversarial/run.py --backend native-image   # native, on a stored image's layers
  python3 tests/adversarial/run.py --case fs.shadow --case net.   # ids or id prefixes

Exit status: 0 when no cell FAILED (n/a cells and absent backends are not failures), 1 otherwise.
The matrix file is written only for a full run (every case) unless --out is given.
"""
import argparse
import datetime
import os
import platform
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from backends import SOURCE_DIR, all_backends  # noqa: E402
from cases import CASES  # noqa: E402
from suite import FAILED, GAP, NA, run_case  # noqa: E402

DEFAULT_OUT = os.path.join(SOURCE_DIR, "docs", "security-matrix.md")


def select_cases(patterns):
    if not patterns:
        return list(CASES)
    chosen = [c for c in CASES if any(c.id == p or (p.endswith(".") and c.id.startswith(p)) for p in patterns)]
    if not chosen:
        raise SystemExit(f"no case matches {patterns}")
    return chosen


def split_lanes(present, cases, n):
    """The (backend, case) pairs in at most n lanes that run side by side. gVisor's cases are mostly
    waits (its sandbox's start, the limit cases' holds) with the CPU left idle, so from 2 lanes up
    they run beside the other backends, which stay in one lane in order (they share the host kernel's
    per-user counts, which the limits.* cases use up on purpose); with 3 lanes gVisor's cases are
    split in two. gVisor keeps a kernel per box: the limit cases of one lane do not share a count
    with another's."""
    slow = [b for b in present if b.name == "docker/runsc"]
    rest = [b for b in present if b.name != "docker/runsc"]
    if n < 2 or not slow or not rest:
        return [[(b, c) for b in present for c in cases]]
    lanes = [[(b, c) for b in rest for c in cases]]
    gvisor = [(b, c) for b in slow for c in cases]
    if n < 3:
        return lanes + [gvisor]
    return lanes + [gvisor[0::2], gvisor[1::2]]


def markdown(cases, backends, cells, absent, elapsed):
    kernel = platform.release()
    lines = [
        "# Security matrix",
        "",
        "Written by `tests/adversarial/run.py` (CTest `adversarial`); do not edit by hand.",
        f"Run: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, kernel {kernel}, "
        f"{len(cases)} cases, {elapsed:.0f} s.",
        "",
        "`held`: the safe outcome was observed. `held+alerted`: and the expected alert came with it. "
        "`n/a`: the case does not apply to that backend, with the reason. `GAP`: a known weakness of that "
        "backend, documented in docs/security.md (not a run failure). `FAILED`: the box did not hold.",
        "",
    ]
    for name, reason in absent.items():
        lines.append(f"- backend **{name}** not present here: {reason}")
    if absent:
        lines.append("")
    present = [b for b in backends if b.name not in absent]
    lines.append("| case | threat | " + " | ".join(b.name for b in present) + " |")
    lines.append("|---|---|" + "---|" * len(present))
    for c in cases:
        row = [f"`{c.id}`", c.title.replace("|", "\\|")]
        for b in present:
            row.append(cells[(c.id, b.name)].cell().replace("|", "\\|"))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    totals = []
    for b in present:
        vs = [cells[(c.id, b.name)].verdict for c in cases]
        totals.append(f"- {b.name}: " + ", ".join(f"{v} {vs.count(v)}" for v in
                                                   ("held+alerted", "held", NA, GAP, FAILED) if vs.count(v)))
    lines += ["Totals:", ""] + totals + [""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", action="append", help="native | native-image | docker/runc | docker/runsc (repeatable)")
    ap.add_argument("--case", action="append", help="case id, or a prefix ending in '.' (repeatable)")
    ap.add_argument("--out", help=f"matrix file (default for a full run: {DEFAULT_OUT})")
    ap.add_argument("--lanes", type=int, default=int(os.environ.get("LSB_ADV_LANES", "1")),
                    help="parallel lanes: 2 runs docker/runsc beside the rest, 3 splits its cases in two")
    ap.add_argument("--require", action="append", default=[],
                    help="fail when this backend is not present (repeatable)")
    args = ap.parse_args()

    backends = all_backends()
    if not args.backend and os.environ.get("LSB_ADV_BACKENDS"):  # e.g. the sanitizer build: native only
        args.backend = os.environ["LSB_ADV_BACKENDS"].split(",")
    if args.backend:
        backends = [b for b in backends if b.name in args.backend]
        if not backends:
            raise SystemExit(f"unknown backend {args.backend}")
    cases = select_cases(args.case)
    absent = {}
    for b in backends:
        reason = b.unavailable()
        if reason:
            absent[b.name] = reason
            print(f"backend {b.name}: not present: {reason}", flush=True)
    missing_required = [n for n in args.require if n in absent]

    cells = {}
    printing = threading.Lock()

    def run_lane(lane):
        for b, c in lane:
            o = run_case(c, b)
            cells[(c.id, b.name)] = o
            with printing:
                print(f"{b.name:13} {c.id:28} {o.cell()[:160]}  [{o.seconds:.1f}s]", flush=True)

    start = time.monotonic()
    try:
        present = [b for b in backends if b.name not in absent]
        for b in present:
            b.policy()  # made once here, not raced for by two lanes of one backend
        lanes = split_lanes(present, cases, args.lanes)
        threads = [threading.Thread(target=run_lane, args=(lane,)) for lane in lanes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for b in backends:
            b.cleanup()
    elapsed = time.monotonic() - start

    failed = [(k, o) for k, o in cells.items() if o.verdict == FAILED]
    text = markdown(cases, backends, cells, absent, elapsed)
    out = args.out or (DEFAULT_OUT if not args.case and not args.backend else None)
    if out:
        with open(out, "w") as f:
            f.write(text)
        print(f"matrix written to {out}")
    print()
    print(text)
    if failed:
        print(f"{len(failed)} cell(s) FAILED: " + ", ".join(f"{k[0]}@{k[1]}" for k, _ in failed))
    if missing_required:
        print(f"required backend(s) not present: {missing_required}")
    return 1 if failed or missing_required else 0


if __name__ == "__main__":
    sys.exit(main())
