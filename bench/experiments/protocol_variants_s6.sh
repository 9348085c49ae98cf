#!/usr/bin/env bash
# bench/experiments/protocol_variants_s6.sh - builds protocol_timeline.cu against a copy of
# the headers with probes in the protocol's arrive_and_wait, for the emulated variant
# (XB_EMULATED=1) on sm_90, into .device-bin/exp/protocol_timeline-NAME. Not part of the
# build; from the repository root, with the pip nvcc on PATH:
#   bash bench/experiments/protocol_variants_s6.sh [REV [NAME]]
# REV (default: the working tree) is the commit whose protocol.hpp gets the probes.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=.device-bin/exp
mkdir -p "$OUTDIR"
INC=/tmp/inc-protocol-sites
rm -rf "$INC" && cp -r hip-src/include "$INC"
REV=${1:-}
NAME=${2:-${REV:-tree}}
if [ -n "$REV" ]; then
  git show "$REV:hip-src/include/xbarrier/protocol.hpp" > "$INC/xbarrier/protocol.hpp"
  for f in cuda amdgcn host; do
    git show "$REV:hip-src/include/xbarrier/platform/$f.hpp" > "$INC/xbarrier/platform/$f.hpp"
  done
fi
python3 - "$INC/xbarrier/protocol.hpp" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
def rep(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)
# arrive_and_wait: its fetch_add result, the rejoin, its poll; with or without run 15's
# published_by_lanes line between the rejoin and the waits (tried, reverted, not in the tree).
rep("""    settled s = {old & W::r_bit, false, false};
    if (XB_UNLIKELY(!still_collecting(old + delta))) s = settle(w, old, old + delta, 1, false, completion);""",
    """    XB_PROTOCOL_TRACE_AFTER(1, old >> 32);
    settled s = {old & W::r_bit, false, false};
    if (XB_UNLIKELY(!still_collecting(old + delta))) s = settle(w, old, old + delta, 1, false, completion);""")
rep("""    P::reconverge(lanes);
    if (s.early) wait_claim_published(w, s.r == 0, XB_OP_ARRIVE);""" if "const bool published" not in s else
    """    P::reconverge(lanes);
    // Every lane""", """    P::reconverge(lanes);
    XB_PROTOCOL_TRACE(3);
""" + ("""    if (s.early) wait_claim_published(w, s.r == 0, XB_OP_ARRIVE);""" if "const bool published" not in s else """    // Every lane"""))
old_wait = "    if (!s.completed) wait_r(w, s.r, XB_OP_WAIT);\n  }" if "const bool published" not in s else "    if (!s.completed && !published) wait_r(w, s.r, XB_OP_WAIT);\n  }"
cond = "!s.completed" if "const bool published" not in s else "!s.completed && !published"
rep(old_wait, """    if (%s) {
      XB_PROTOCOL_TRACE_AFTER(10, P::template poll<ms>(w) >> 32);
      wait_r(w, s.r, XB_OP_WAIT);
      XB_PROTOCOL_TRACE(12);
    }
  }""" % cond)
rep("""    for (;;) {
      completion();
      const uint64_t delta = W::r_bit - (uint64_t(W::expected(claimed_state)) << L::a_shift);
      const uint64_t old = P::template fetch_add<ms>(w, delta, mem_order::acq_rel);""", """    for (;;) {
      XB_PROTOCOL_TRACE(5);
      completion();
      const uint64_t delta = W::r_bit - (uint64_t(W::expected(claimed_state)) << L::a_shift);
      const uint64_t old = P::template fetch_add<ms>(w, delta, mem_order::acq_rel);
      XB_PROTOCOL_TRACE_AFTER(6, old >> 32);""")
open(p, "w").write(s)
PY
nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -DXB_EMULATED=1 -I "$INC" -o "$OUTDIR/protocol_timeline-$NAME" \
  bench/experiments/protocol_timeline.cu
ls -la "$OUTDIR/protocol_timeline-$NAME"
