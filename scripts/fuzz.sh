#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, ASan+UBSan) in ${LSB_FUZZ_BUILD_DIR:-build-fuzz}
# and runs each for a bounded time on a copy of its seed corpus.
#   LSB_FUZZ_SECONDS   seconds per target (default 60)
#   LSB_FUZZ_TARGETS   space-separated subset (default: all)
#   LSB_FUZZ_JOBS      build parallelism (default 2)
#   LSB_FUZZ_PARALLEL  targets fuzzed at once (default 2)
# A crash stops the run with a non-zero exit; its input is left in build-fuzz/findings/<target>/:
# fix the bug, then keep the input in fuzz/regressions/<target>/ (replayed by CTest fuzz_replay_*).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LSB_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${LSB_FUZZ_SECONDS:-60}
targets=${LSB_FUZZ_TARGETS:-"policy_parser http_request init_frame attach_demux mcp_dispatch archive_in egress_head e2b_multipart"}
# Targets run two at a time (a fuzzer is one process on one core; CI has two).
parallel=${LSB_FUZZ_PARALLEL:-2}
command -v clang++-14 >/dev/null || { echo "fuzz: clang++-14 missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
if [[ ! -f $build/CMakeCache.txt ]]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$root/fuzz" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j "${LSB_FUZZ_JOBS:-2}" --target $(for t in $targets; do echo "fuzz_$t"; done)

# One target: its kept regressions replayed, then fuzzed; non-zero when either fails.
fuzz_one() {
  local t=$1 rc=0
  local work="$build/corpus/$t" findings="$build/findings/$t"
  mkdir -p "$work" "$findings"
  cp -n "$root/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  # Crashing inputs kept as regressions must stay fixed: replay them first.
  if compgen -G "$root/fuzz/regressions/$t/*" >/dev/null; then
    "$build/fuzz_$t" -runs=0 "$root/fuzz/regressions/$t" >"$findings/replay.log" 2>&1 ||
      { echo "fuzz: $t: a kept regression input fails again (see $findings/replay.log)" >&2; return 1; }
  fi
  echo "fuzz: $t for ${seconds}s"
  if ! "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$findings/" "$work" >"$findings/fuzz.log" 2>&1; then
    echo "fuzz: $t FOUND A PROBLEM; input(s) in $findings/, log $findings/fuzz.log" >&2
    tail -40 "$findings/fuzz.log" >&2
    rc=1
  else
    grep -E "^stat::number_of_executed_units|^Done" "$findings/fuzz.log" | tr '\n' ' ' | sed "s/^/fuzz: $t clean: /"; echo
  fi
  return $rc
}

status=0
pids=()
for t in $targets; do
  fuzz_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
