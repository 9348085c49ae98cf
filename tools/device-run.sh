#!/usr/bin/env bash
# tools/device-run.sh - runs prebuilt test binaries on a GPU machine (no Rust needed there).
# Build them on a machine with Rust and the toolchains with tools/device-build.sh, which
# fills .device-bin/; copy the repository with .device-bin/ to the GPU machine; there, from
# the repository root:
#   bash tools/device-run.sh
# Results (progress.txt, bench.md, bench.json, bench.svg, logs.tar.gz, checked-progress.txt,
# checked-logs.tar.gz) go to $OUT, or /tmp/xbar-out when OUT is unset; nothing is written
# into the repository. A short table is printed last.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BIN=.device-bin
RESULTS="${OUT:-/tmp/xbar-out}"   # the results (see above)
OUT=/tmp/xbar-logs                 # one log per step, packed into $RESULTS/logs.tar.gz at the end
mkdir -p "$OUT" "$RESULTS"
export XBAR_REQUIRE_GPU=1
declare -a rows
run() {  # name, command...
  local name=$1; shift
  local start=$SECONDS
  timeout "${LIMIT:-150}" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E "test result:|passed, .* failed|protocol_stress: OK|measured, .* wrong|^wrong copies|^guesses that missed|^README kernel" "$OUT/$name.log" | tail -1)
  rows+=("$(printf '%-28s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - start))" "$summary")")
  # As each step ends, so that a run cut short still brings back how far it got.
  printf '%s\n' "${rows[-1]}" | tee -a "$RESULTS/progress.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
[ -x "$BIN/xbar" ] && run info "$BIN/xbar" info
run backend-cuda-gpu "$BIN/backend-cuda-gpu" --include-ignored --test-threads 1
[ -x "$BIN/user-kernel" ] && run user-kernel "$BIN/user-kernel"
[ -x "$BIN/host-handoff" ] && run host-handoff "$BIN/host-handoff" --include-ignored
# The cases whose two launches meet at one barrier on one device (docs/multi-gpu.md) in
# steps of their own: should the GPU not run both at once they hang, and their limit then
# ends only them.
LIMIT=60 run peer-one-device-checked "$BIN/conformance-checked" --test-threads 1 peer_one_device
LIMIT=60 run peer-one-device-release "$BIN/conformance-release" --test-threads 1 peer_one_device
run conformance-checked "$BIN/conformance-checked" --test-threads 1 --skip peer_one_device
run misuse-checked "$BIN/misuse-checked" --test-threads 1 "[cuda]"
# "[cuda" selects every variant: "[cuda]" (native), "[cuda-emulated]" and "[cuda-grouped]".
LIMIT=150 run conformance-release "$BIN/conformance-release" --test-threads 1 "[cuda" --skip peer_one_device
# Known-wrong completion engines (tools/build-mutants.sh): the completion cases must fail.
for mutant in "$BIN"/mutant-*; do
  [ -x "$mutant" ] || continue
  LIMIT=30 run "$(basename "$mutant")" "$mutant" --test-threads 1 "[cuda] completion_"
done
# The benchmarks (table in bench.log; markdown, JSON and an SVG plot beside it; BENCH=0 skips them), before the
# long sanitizer runs; then the probes behind docs/performance.md (bench/cpp/*.cu, built
# by device-build.sh where nvcc is found; PROBES=0 skips them).
[ -x "$BIN/xbar" ] && [ "${BENCH:-1}" != 0 ] && LIMIT=120 run bench "$BIN/xbar" bench --out "$RESULTS/bench.md" --json "$RESULTS/bench.json" --plot "$RESULTS/bench.svg"
if [ "${PROBES:-1}" != 0 ]; then
  for probe in bulk_copy_ceiling round_trip_forms emulated_forms grid_forms host_device_phases system_memory; do
    [ -x "$BIN/$probe" ] && LIMIT=120 run "probe-$probe" "$BIN/$probe"
  done
fi
# SANITIZER_REPS_DIVISOR=N runs the sanitizers' conformance with the cases' repetitions
# divided by N (XBAR_REPS_DIVISOR, conformance/src/harness.rs): every case, fewer rounds.
# Sanitizers per variant: SANITIZERS lists tool:variant pairs, none when set empty (racecheck models hardware
# barriers only, so it is run on the native variant, where every barrier is an mbarrier).
# racecheck skips the 10^5-stage ring, which at full counts takes longer than the limit
# under racecheck, and the completion-function cases: it reports the hand-over between
# completion steps run by different threads (claimed with a CAS, ordered through an
# mbarrier arrival and a test_wait) as races, and runs past the limit.
# synccheck skips the completion-function cases on the native variant: it requires every
# thread that arrives on an mbarrier to wait on that mbarrier before arriving again, and
# reports "Barrier error detected. Missing wait." (aborting the launch) otherwise; the
# native completion engine's threads wait on its publishing mbarrier, and cuda::barrier
# lets a token be dropped anyway.
RACECHECK_SKIP=(--skip producer_consumer_ring_100k_stages --skip completion_ --skip arrive_and_drop)
# Every sanitizer skips the cases whose kernels of two launches meet at one barrier
# (docs/multi-gpu.md): each waits for the other, so a tool that ran launches one at a time
# would hold them both forever (docs/multi-gpu.md says which tools were tried).
CONCURRENT_SKIP=(--skip peer_one_device --skip multi_gpu)
SYNCCHECK_SKIP=(--skip completion_ --skip arrive_and_drop)
for pair in ${SANITIZERS-memcheck:cuda racecheck:cuda synccheck:cuda memcheck:cuda-emulated synccheck:cuda-emulated memcheck:cuda-grouped synccheck:cuda-grouped}; do
  tool=${pair%%:*} target=${pair#*:}
  skip=("${CONCURRENT_SKIP[@]}")
  [ "$tool" = racecheck ] && skip+=("${RACECHECK_SKIP[@]}")
  [ "$tool" = synccheck ] && [ "$target" = cuda ] && skip+=("${SYNCCHECK_SKIP[@]}")
  XBAR_REPS_DIVISOR=${SANITIZER_REPS_DIVISOR:-1} LIMIT=${SANITIZER_LIMIT:-60} run "sanitizer-$tool-$target" \
    compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN/conformance-release" --test-threads 1 "[$target]" "${skip[@]}"
done
# Checked device code (the protocol on every block barrier, with shadow mbarriers that
# carry its synchronization: engine_sm90_checked.hpp) under racecheck, one process per case, and
# synccheck, with the repetitions divided by CHECKED_REPS_DIVISOR (default 100; at full
# counts racecheck takes minutes per case); its rows go to checked-progress.txt.
# CHECKED_SANITIZERS=0 skips it.
[ "${CHECKED_SANITIZERS:-1}" != 0 ] && CHECKED_SUITES=0 OUT="$RESULTS" bash tools/device-run-checked.sh
cat "$OUT/gpu.txt"
[ -f "$RESULTS/bench.md" ] && cat "$RESULTS/bench.md"
printf '%s\n' "${rows[@]}" | tee "$OUT/summary.txt"
tar czf "$RESULTS/logs.tar.gz" -C "$OUT" .
