#!/usr/bin/env bash
# bench/experiments/completion_variants_s6.sh - the session-6 variants of the native
# completion engine, as edits to completion_engine.hpp at 0574e95 (before one-look-per-warp,
# completion_engine.hpp 6.), each built into .device-bin/exp/ as ctime-NAME
# (completion_round_trip.cu) and timeline-NAME (completion_timeline.cu). Not part of the
# build; from the repository root, with the pip nvcc on PATH:
#   bash bench/experiments/completion_variants_s6.sh
#   ./ctime-NAME 132        (on the GPU machine: cycles per round trip at 128/256/1024 threads)
# Variants (bench/results/2026-11-30-session6-h200.md, runs 4-7):
#   tree        0574e95's engine
#   poll64      waiters poll P with test_wait 64 times before the try_wait loop
#   pollonly    waiters never suspend: test_wait on P, and a look for the step, in a loop
#   rejoin      the call's lanes __syncwarp after their first settle
#   rejoinpoll  rejoin + poll64
#   hint100     try_wait on P with a 100 ns suspend hint
#   fine        tree + XB_TRACE_AFTER probes at the results of each step (timeline only)
#   e1          an arrival that saw its phase end in M skips the stable read of d
#   e2          e1 + one lane per (warp, barrier) among those that saw an end settles, the
#               others wait for it (__match_any_sync, __ballot_sync, __syncwarp)
#   e3          e2 + the leader tells lanes of its phase that the step ran (they skip the
#               wait): what the tree has since
set -euo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=.device-bin/exp
mkdir -p "$OUTDIR"
build() {  # name, python code that edits `s` (the header's text) with rep(old, new)
  local name=$1
  rm -rf "/tmp/inc-$name" && cp -r hip-src/include "/tmp/inc-$name"
  git show 0574e95:hip-src/include/xbarrier/completion_engine.hpp > "/tmp/inc-$name/xbarrier/completion_engine.hpp"
  python3 - "/tmp/inc-$name/xbarrier/completion_engine.hpp" "$2" <<'PY'
import sys
path, code = sys.argv[1], sys.argv[2]
s = open(path).read()
def rep(old, new):
    global s
    assert old in s, old
    s = s.replace(old, new)
exec(code)
open(path, "w").write(s)
PY
  nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -DEXPNAME="\"$name\"" -I "/tmp/inc-$name" \
    -o "$OUTDIR/ctime-$name" bench/experiments/completion_round_trip.cu
  nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I "/tmp/inc-$name" \
    -o "$OUTDIR/timeline-$name" bench/experiments/completion_timeline.cu
}
WAIT_LOOP='    XB_COMPLETION_TRACE(10);
    while (!mbarrier::try_wait_parity(published(w), parity)) {'
POLL64='    XB_COMPLETION_TRACE(10);
    for (int i = 0; i < 64; ++i) if (mbarrier::test_wait_parity(published(w), parity)) return;
    while (!mbarrier::try_wait_parity(published(w), parity)) {'
FIRST_LOOK='    XB_COMPLETION_TRACE(1);
    const bool ran = mbarrier::test_wait(w, state) && settle(w, fn);
    XB_COMPLETION_TRACE(2);
    if (ran) return true;'
REJOIN='    XB_COMPLETION_TRACE(1);
    const unsigned lanes = __activemask();
    const bool ran = mbarrier::test_wait(w, state) && settle(w, fn);
    __syncwarp(lanes);
    XB_COMPLETION_TRACE(2);
    if (ran) return true;'
E1='    XB_COMPLETION_TRACE(1);
    const bool ended_at_once = mbarrier::test_wait(w, state);
    const bool ran = ended_at_once && settle(w, fn);
    XB_COMPLETION_TRACE(2);
    if (ran) return true;
    if (ended_at_once) return false;'
E2='    XB_COMPLETION_TRACE(1);
    const bool ended_at_once = mbarrier::test_wait(w, state);
    const unsigned same = __match_any_sync(__activemask(), reinterpret_cast<unsigned long long>(w));
    const unsigned seers = __ballot_sync(same, ended_at_once);
    bool ran = false;
    if (seers) {
      unsigned lane;
      asm("mov.u32 %0, %%laneid;" : "=r"(lane));
      if (lane == unsigned(__ffs(seers) - 1)) ran = settle(w, fn);
      __syncwarp(same);
      SHARE
    }
    XB_COMPLETION_TRACE(2);
    if (ran) return true;
    if (ended_at_once) return false;'
SHARE='const unsigned leader = unsigned(__ffs(seers) - 1);
      const bool leader_ran = __shfl_sync(same, ran ? 1 : 0, leader) != 0;
      const bool leader_parity = __shfl_sync(same, parity_of_token(state) ? 1 : 0, leader) != 0;
      if (leader_ran && ended_at_once && leader_parity == parity_of_token(state)) return true;'
export WAIT_LOOP POLL64 FIRST_LOOK REJOIN E1 E2 SHARE
env_rep() { echo "import os; rep(os.environ['$1'], os.environ['$2']${3:-})"; }
build tree "pass"
build poll64 "$(env_rep WAIT_LOOP POLL64)"
build pollonly "rep('    while (!mbarrier::try_wait_parity(published(w), parity)) {', '    while (!mbarrier::test_wait_parity(published(w), parity)) {')"
build rejoin "$(env_rep FIRST_LOOK REJOIN)"
build rejoinpoll "$(env_rep FIRST_LOOK REJOIN); $(env_rep WAIT_LOOP POLL64)"
build hint100 "rep('    while (!mbarrier::try_wait_parity(published(w), parity)) {\n      XB_COMPLETION_TRACE(11);', '    while (!mbarrier::try_wait_parity_hint(published(w), parity, 100)) {\n      XB_COMPLETION_TRACE(11);')"
build fine "
rep('''    XB_COMPLETION_TRACE(1);
    const bool ran = mbarrier::test_wait(w, state) && settle(w, fn);''', '''    XB_COMPLETION_TRACE(1);
    XB_TRACE_AFTER(20, uint32_t(state >> 32));
    const bool seen_end = mbarrier::test_wait(w, state);
    XB_TRACE_AFTER(21, seen_end);
    const bool ran = seen_end && settle(w, fn);''')
rep('''      uint64_t k = read_control(w);
      if (k & dropping) {''', '''      uint64_t k = read_control(w);
      XB_TRACE_AFTER(22, uint32_t(k));
      if (k & dropping) {''')
rep('''      if (!mbarrier::test_wait_parity(w, done_steps(k) & 1)) return ran;''', '''      const bool m_ended = mbarrier::test_wait_parity(w, done_steps(k) & 1);
      XB_TRACE_AFTER(23, m_ended);
      if (!m_ended) return ran;''')
rep('''      const uint32_t d = done_steps(read_control(w));
      const bool ended = mbarrier::test_wait(w, state);
      if (done_steps(read_control(w)) != d) continue;''', '''      const uint32_t d = done_steps(read_control(w));
      XB_TRACE_AFTER(24, d);
      const bool ended = mbarrier::test_wait(w, state);
      XB_TRACE_AFTER(25, ended);
      const uint32_t d2 = done_steps(read_control(w));
      XB_TRACE_AFTER(26, d2);
      if (d2 != d) continue;''')"
build e1 "$(env_rep FIRST_LOOK E1)"
build e2 "$(env_rep FIRST_LOOK E2 ".replace('SHARE', '')")"
build e3 "$(env_rep FIRST_LOOK E2 ".replace('SHARE', os.environ['SHARE'])")"
ls -la "$OUTDIR"
