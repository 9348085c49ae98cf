#!/usr/bin/env bash
# tools/device-run-checked.sh - checked CUDA builds on a GPU machine: the conformance and
# misuse suites, then every conformance case of the sanitizer build (XB_SANITIZER: shadow
# mbarriers, long sleeps in the wait loops) under compute-sanitizer racecheck (one process
# per case, PARALLEL at a time, each case PASSES times) and the suite under synccheck, with
# the repetitions divided by CHECKED_REPS_DIVISOR (conformance/src/harness.rs). Build with
# tools/device-build.sh; on the GPU machine, from the repository root:
#   bash tools/device-run-checked.sh
# Results (checked-progress.txt, checked-logs.tar.gz) go to $OUT, or /tmp/xbar-out when OUT
# is unset; a table is printed last, and the exit status is 1 when a racecheck case run
# failed or is missing. CHECKED_SUITES=0 skips the plain suites (tools/device-run.sh runs
# them itself).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BIN=.device-bin
RESULTS="${OUT:-/tmp/xbar-out}"
LOGS=/tmp/xbar-checked-logs
rm -rf "$LOGS" && mkdir -p "$LOGS" "$RESULTS"
ROWS="$RESULTS/checked-progress.txt"
: > "$ROWS"  # this run's rows only: the summary counts them
export XBAR_REQUIRE_GPU=1
summary() { grep -E "test result:|SUMMARY" "$1" | sed 's/^=* *//' | tr '\n' ' ' | cut -c1-150; }
step() {  # name, limit, command...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  printf '%-44s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - start))" "$(summary "$LOGS/$name.log")" | tee -a "$ROWS"
}
if [ "${CHECKED_SUITES:-1}" != 0 ]; then
  step conformance-checked 120 "$BIN/conformance-checked" --test-threads 1
  step misuse-checked 60 "$BIN/misuse-checked" --test-threads 1 "[cuda]"
fi
# One racecheck process per case: a case that runs past its limit costs only itself.
# PASSES=N runs every case N times (rows and logs named "case #pass" from the second on).
racecheck_case() {
  local name="racecheck-checked $1"
  [ "${2:-1}" -gt 1 ] && name="$name #$2"
  XBAR_REPS_DIVISOR=${CHECKED_REPS_DIVISOR:-100} step "$name" "${CASE_LIMIT:-120}" \
    compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN/conformance-checked-sanitizer" --test-threads 1 --exact "[cuda] $1"
}
export -f racecheck_case step summary
export BIN LOGS RESULTS ROWS
# Not the cases whose kernels of two launches meet at one barrier: under a tool that runs
# launches one at a time each would wait for the other forever (tools/device-run.sh).
"$BIN/conformance-checked" --list 2>/dev/null | sed -n "s/^\\[cuda\\] \\([A-Za-z0-9_]*\\)[ :].*/\\1/p" \
  | grep -v -e '^peer_one_device' -e '^multi_gpu' > "$LOGS/cases.txt"
for pass in $(seq "${PASSES:-1}"); do sed "s/\$/ $pass/" "$LOGS/cases.txt"; done > "$LOGS/runs.txt"
# shellcheck disable=SC2016  # expanded by the child bash, from xargs' arguments
xargs -P "${PARALLEL:-3}" -L1 bash -c 'racecheck_case "$0" "$1"' < "$LOGS/runs.txt"
XBAR_REPS_DIVISOR=${CHECKED_REPS_DIVISOR:-100} step synccheck-checked 150 \
  compute-sanitizer --tool synccheck --error-exitcode 9 "$BIN/conformance-checked-sanitizer" --test-threads 1 "[cuda]" \
  --skip peer_one_device --skip multi_gpu
tar czf "$RESULTS/checked-logs.tar.gz" -C "$LOGS" .
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "--- failures"
grep -h -E "barrier fault|panicked|hazard|Barrier error" "$LOGS"/*.log | sort | uniq -c | sort -rn | cut -c1-300 | head -12
echo "--- summary ($(wc -l < "$LOGS/cases.txt") cases listed, ${PASSES:-1} passes; every row in $RESULTS/checked-progress.txt)"
planned=$(wc -l < "$LOGS/runs.txt")
race_rows=$(grep -c "^racecheck-checked" "$ROWS")
race_ok=$(grep "^racecheck-checked" "$ROWS" | grep -c "rc=0 ")
# A run cut off by its limit prints no summary: count those as well as the hazards.
unsummarized=$(grep -L "RACECHECK SUMMARY" "$LOGS"/racecheck-*.log 2>/dev/null | wc -l)
echo "racecheck case runs: $race_ok of $planned planned passed ($race_rows ran, $unsummarized without a sanitizer summary); hazard counts seen: $(grep -ho "[0-9]* hazards displayed" "$LOGS"/racecheck-*.log | sort | uniq -c | tr '\n' ' ')"
grep -v "^racecheck-checked" "$ROWS"
grep "^racecheck-checked" "$ROWS" | grep -v "rc=0 "
if [ "$planned" -eq 0 ] || [ "$race_ok" -ne "$planned" ]; then
  echo "racecheck: FAILED (no case listed, or a case run failed or is missing)"
  exit 1
fi
echo "racecheck: every case run passed"
