#!/usr/bin/env bash
# tools/genmc-check.sh - model-checks the portable protocol (hip-src/include/xbarrier/
# protocol.hpp) and the split form of system scope on it (engine_system.hpp) with GenMC
# 0.11: every check program of hip-src/tests/genmc under RC11 and
# IMM (every execution of 2-3 threads over 1-3 phases; assertions, data races on the plain
# data handed over, waits that can never end), then known-wrong versions of the protocol
# and of the platform layer (mutants), each of which some check must reject. The mutants
# patch a copy of the headers in a temporary directory, never the tracked files.
#
#   XBAR_GENMC=/path/to/genmc tools/genmc-check.sh [NAME...]   (else `genmc` on PATH)
#
# NAMEs, if given, restrict the run to the checks and mutants of those names.
# One line per run: name, model, executions explored, seconds, result. Exit 0 when every
# check passes and every mutant is killed, 1 otherwise, 2 when GenMC cannot run here.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${XBAR_GENMC:-}" ]; then
  GENMC=$XBAR_GENMC
  if [ ! -x "$GENMC" ]; then
    echo "genmc-check: XBAR_GENMC=$GENMC is not an executable; fix: point it at the GenMC 0.11 wrapper script" >&2
    exit 2
  fi
elif GENMC=$(command -v genmc); then
  :
else
  echo "genmc-check: GenMC 0.11 not found: XBAR_GENMC is not set and there is no genmc on PATH." >&2
  echo "  fix: set XBAR_GENMC to its wrapper script (which adds GenMC's headers), or put genmc on PATH" >&2
  exit 2
fi
# GenMC runs Debian's clang-19 and links LLVM 19; say which package is missing.
libs=$(ldconfig -p 2>/dev/null || true)
missing=()
[ -x /usr/bin/clang-19 ] || missing+=(clang-19)
for pair in libLLVM.so.19.1:libllvm19 libz3.so.4:libz3-4 libffi.so.8:libffi8 libedit.so.2:libedit2; do
  grep -qF "${pair%%:*}" <<<"$libs" || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "genmc-check: GenMC needs ${missing[*]}; fix: apt-get install -y ${missing[*]}" >&2
  exit 2
fi

# The prebuilt GenMC's wrapper script probes for LLVM with `ldconfig -p | grep -q` under
# pipefail, which fails whenever grep exits before ldconfig has written everything (SIGPIPE),
# more often the more libraries the machine has. The prerequisites are checked above, so
# where the wrapper's binary and headers lie beside it, run the binary the way it would.
GENMC_CMD=("$GENMC")
GENMC_INCLUDE=()
genmc_home=$(cd "$(dirname "$GENMC")" && pwd)
for bin in "$genmc_home"/bin/genmc-*; do
  if [ -x "$bin" ] && [ -d "$genmc_home/include" ]; then
    GENMC_CMD=("$bin")
    GENMC_INCLUDE=(-I"$genmc_home/include")
  fi
done

SRC=hip-src/tests/genmc
INC=hip-src/include
LIMIT=120  # seconds per GenMC run; the largest check takes about 10
WORK=$(mktemp -d)
# GenMC leaves the module it compiled in /tmp (__genmc.ll.*, whatever TMPDIR says): remove
# those this run made.
touch "$WORK/.start"
trap 'find /tmp -maxdepth 1 -name "__genmc.ll.*" -newer "$WORK/.start" -delete 2>/dev/null; rm -rf "$WORK"' EXIT

# Checks: name, program, extra compiler flags. Each runs under both models. .checked: the
# checked build (XB_CHECKED=1: the misuse checks, which must not fire); .device: the wide
# layout of device and system scope instead of block scope; .early: a drop during the
# previous phase's completion step; .acq: completers acquire by acq_rel RMWs (CUDA's and the
# host's platform form) instead of a fence after release RMWs (AMDGPU's, the default here).
CHECKS=(
  "arrive_wait|arrive_wait|"
  "arrive_and_wait|arrive_and_wait|"
  "arrive_and_wait.checked|arrive_and_wait|-DXB_CHECKED=1"
  "arrive_and_wait.device|arrive_and_wait|-DGM_PROTO=gm::device"
  "arrive_and_wait.wave|arrive_and_wait|-DGM_WAVE=2"
  "arrive_and_wait.wave.checked|arrive_and_wait|-DGM_WAVE=2 -DXB_CHECKED=1"
  "completion|completion|"
  "completion.device|completion|-DGM_PROTO=gm::device"
  "early_arrival|early_arrival|"
  "early_arrival.checked|early_arrival|-DXB_CHECKED=1"
  "early_arrival.device|early_arrival|-DGM_PROTO=gm::device"
  "early_completes|early_completes|"
  "early_completes.checked|early_completes|-DXB_CHECKED=1"
  "early_completes.device|early_completes|-DGM_PROTO=gm::device"
  "drop|drop|"
  "drop.checked|drop|-DXB_CHECKED=1"
  "drop.device|drop|-DGM_PROTO=gm::device"
  "tx|tx|"
  "tx.checked|tx|-DXB_CHECKED=1"
  "tx_step|tx_step|"
  "tx_step.checked|tx_step|-DXB_CHECKED=1"
  "tx_expect|tx_expect|"
  "tx_expect.checked|tx_expect|-DXB_CHECKED=1"
  "try_wait|try_wait|"
  "try_wait.checked|try_wait|-DXB_CHECKED=1"
  "try_wait.device|try_wait|-DGM_PROTO=gm::device"
  "direct|direct|"
  "direct.block|direct|-DGM_DIRECT=gm::direct_block"
  "direct.acq|direct|-DGM_ACQUIRING_RMW=1"
  "direct.block.acq|direct|-DGM_DIRECT=gm::direct_block -DGM_ACQUIRING_RMW=1"
  "direct_tx|direct_tx|"
  "direct_tx_first|direct_tx_first|"
  "direct_tx_arm_completes|direct_tx_arm_completes|"
  "direct_window.block|direct_window|-DGM_DIRECT=gm::direct_block"
  "direct_window|direct_window|-DGM_DIRECT=gm::direct_device"
  "direct_spill.block|direct_spill|-DGM_DIRECT=gm::direct_block"
  "direct_spill|direct_spill|-DGM_DIRECT=gm::direct_device"
  "direct_spill_drop.block|direct_spill_drop|-DGM_DIRECT=gm::direct_block"
  "direct_spill_drop|direct_spill_drop|-DGM_DIRECT=gm::direct_device"
  "direct_surplus.block|direct_surplus|-DGM_DIRECT=gm::direct_block"
  "direct_surplus|direct_surplus|-DGM_DIRECT=gm::direct_device"
  "direct_surplus_wait.block|direct_surplus_wait|-DGM_DIRECT=gm::direct_block"
  "direct_surplus_wait|direct_surplus_wait|-DGM_DIRECT=gm::direct_device"
  "direct_surplus_multi.block|direct_surplus_multi|-DGM_DIRECT=gm::direct_block"
  "direct_surplus_multi|direct_surplus_multi|-DGM_DIRECT=gm::direct_device"
  "direct_surplus_dropped.block|direct_surplus_dropped|-DGM_DIRECT=gm::direct_block"
  "direct_surplus_dropped|direct_surplus_dropped|-DGM_DIRECT=gm::direct_device"
  "direct_window_drop.block|direct_window_drop|-DGM_DIRECT=gm::direct_block"
  "direct_window_drop|direct_window_drop|-DGM_DIRECT=gm::direct_device"
  "arrive_wait.direct|arrive_wait|-DGM_PROTO=gm::direct_block"
  "arrive_and_wait.direct|arrive_and_wait|-DGM_PROTO=gm::direct_block"
  "arrive_and_wait.direct.wave|arrive_and_wait|-DGM_PROTO=gm::direct_block -DGM_WAVE=2"
  "arrive_and_wait.direct.device|arrive_and_wait|-DGM_PROTO=gm::direct_device"
  "arrive_and_wait.direct.device.wave|arrive_and_wait|-DGM_PROTO=gm::direct_device -DGM_WAVE=2"
  "arrive_and_wait.direct.acq|arrive_and_wait|-DGM_PROTO=gm::direct_block -DGM_ACQUIRING_RMW=1"
  "arrive_and_wait.direct.device.acq|arrive_and_wait|-DGM_PROTO=gm::direct_device -DGM_ACQUIRING_RMW=1"
  "tx_expect.direct|tx_expect|-DGM_PROTO=gm::direct_block"
  "try_wait.direct|try_wait|-DGM_PROTO=gm::direct_block"
  "stale_token|stale_token|"
  "stale_token.device|stale_token|-DGM_PROTO=gm::device"
  "system_split|system_split|"
  "system_split.checked|system_split|-DXB_CHECKED=1"
  "system_split.three|system_split_three|"
  "system_split_drop|system_split_drop|"
  "system_split_drop.early|system_split_drop|-DGM_EARLY_DROP=1"
  "system_split_drop.early.checked|system_split_drop|-DGM_EARLY_DROP=1 -DXB_CHECKED=1"
)

# genmc_run MODEL INCLUDE_DIR PROGRAM_DIR PROGRAM FLAGS [OPTIONS]: runs GenMC once (OPTIONS:
# more of its own options) and sets RESULT (ok, error, tool), EXECS, SECS and DETAIL (the
# first error line).
genmc_run() {
  local model=$1 inc=$2 dir=$3 prog=$4 flags=$5 opts=${6:-} out rc tries=0 start end
  local -a mflag=()
  [ "$model" = imm ] && mflag=(--imm)
  local -a gflags=()
  [ -n "$opts" ] && read -r -a gflags <<<"$opts"
  local -a extra=()
  [ -n "$flags" ] && read -r -a extra <<<"$flags"
  start=$(date +%s%N)
  while :; do
    rc=0
    out=$(timeout "$LIMIT" "${GENMC_CMD[@]}" "${mflag[@]}" "${gflags[@]}" --disable-estimation --check-liveness -- \
      "${GENMC_INCLUDE[@]}" -std=c++17 -O1 "${extra[@]}" -I "$inc" "$dir/$prog.cpp" 2>&1) || rc=$?
    # The wrapper's own library probe fails now and then (a pipe closed early): retry.
    if [ "$rc" -eq 3 ] && grep -q '^genmc: needs' <<<"$out" && [ $((tries += 1)) -lt 3 ]; then continue; fi
    break
  done
  end=$(date +%s%N)
  SECS=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
  EXECS=$(sed -n 's/^Number of complete executions explored: \([0-9]*\).*/\1/p' <<<"$out" | tail -1)
  EXECS=${EXECS:-0}
  DETAIL=""
  if [ "$rc" -eq 0 ] && grep -q '^No errors were detected' <<<"$out"; then
    RESULT=ok
  elif [ "$rc" -eq 124 ]; then
    RESULT=tool
    DETAIL="no verdict within ${LIMIT}s"
  elif grep -qE '^Error: |violation|race' <<<"$out" && ! grep -q 'error: ' <<<"$out"; then
    RESULT=error
    DETAIL=$(awk '/^(Assertion violation|Non-terminating|Error: )/ && !/^Error: Safety/ { print; exit }' <<<"$out")
    DETAIL=${DETAIL:-$(grep -m1 '^Error: ' <<<"$out")}
  else
    RESULT=tool
    DETAIL=$(grep -m1 -E 'error|Error' <<<"$out" || tail -1 <<<"$out")
  fi
}

# selected NAME: true when no NAME was given on the command line, or NAME was.
selected() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local n
  for n in "${ONLY[@]}"; do [ "$n" = "$1" ] && return 0; done
  return 1
}
ONLY=("$@")

failures=0
checks_run=0
t0=$(date +%s)
echo "== checks (the headers as they are)"
for entry in "${CHECKS[@]}"; do
  IFS='|' read -r name prog flags <<<"$entry"
  selected "$name" || continue
  for model in rc11 imm; do
    genmc_run "$model" "$INC" "$SRC" "$prog" "$flags"
    checks_run=$((checks_run + 1))
    if [ "$RESULT" = ok ] && [ "$EXECS" -gt 0 ]; then
      status=OK
    else
      status="FAIL ($RESULT: ${DETAIL:-no complete execution})"
      failures=$((failures + 1))
    fi
    printf '%-26s %-5s %8s execs %7ss  %s\n' "$name" "$model" "$EXECS" "$SECS" "$status"
  done
done

# Mutants: name, the file it patches (under include/ or genmc/ of the copy), the checks
# expected to kill it (names from CHECKS, tried in order under RC11 until one reports an
# error), GenMC options for those runs (mostly none), and python code that edits the file
# with sub(old, new) (old must occur exactly once).
MUTANTS=(
  # the arming that carries with arrivals left over leaves their phase unarmed
  "direct-no-spill-arming|include/xbarrier/protocol.hpp|direct_spill.block direct_spill|
sub('if (!no_arrivals(after)) arm_spill(lanes, w, after);', '')"
  # a surplus arrival's token names the phase its RMW found, not the one it is counted in
  "direct-surplus-old-token|include/xbarrier/protocol.hpp|direct_surplus.block direct_surplus|
sub('if (XB_UNLIKELY(!c.completed && surplus(c.old))) return parity(surplus_token(single_lane(), w, c.old));', '')"
  # arrive_and_wait's surplus arrival waits on the phase its atomic found
  "direct-surplus-old-token-aw|include/xbarrier/protocol.hpp|direct_surplus_wait.block direct_surplus_wait|
sub('const uint64_t token = XB_UNLIKELY(surplus(a.old)) ? surplus_token(lanes, w, a.old) : a.old;', 'const uint64_t token = a.old;')"
  # a surplus arrival hands out its token before the phases ahead of it have completed
  "direct-surplus-no-wait|include/xbarrier/protocol.hpp|direct_surplus.block direct_surplus|
sub('return armed(s) || arrivals_of(s) < expected_of(s) || no_arrivals(s);', 'return true;')"
  # a surplus arrival's token flips R once, however many phases ahead it is counted
  "direct-surplus-flips-once|include/xbarrier/protocol.hpp|direct_surplus_multi.block direct_surplus_multi|
sub('return old ^ (uint64_t(ahead & 1) << 63);', 'return old ^ r_bit;')"
  # a surplus arrival waits on a word that has drained to nothing arrived (everyone else
  # dropped out meanwhile): its arrive() never returns
  "direct-surplus-misses-drain|include/xbarrier/protocol.hpp|direct_surplus_dropped.block direct_surplus_dropped|
sub('return armed(s) || arrivals_of(s) < expected_of(s) || no_arrivals(s);', 'return armed(s) || arrivals_of(s) < expected_of(s);')"
  # a tx operation or drop that found a window waits for the arming or a flip of R only
  # (the window's armings flip R twice and leave it unarmed and empty)
  "direct-tx-wait-misses-drain|include/xbarrier/protocol.hpp|direct_window_drop.block direct_window_drop|
sub('return armed(s) || no_arrivals(s) || (s & r_bit) != r; }', 'return armed(s) || (s & r_bit) != r; }')"
  # a drop lowers E by a fetch_add of its own, then arrives as a plain arrival: E may
  # drop in a phase not yet armed
  "direct-drop-by-add|include/xbarrier/protocol.hpp|direct_spill_drop.block direct_spill_drop|
sub('if (drop) return parity(tx_update(w, 1, 0, true));', 'if (drop) (void)P::template fetch_add<ms>(w, uint64_t(0) - 1, mem_order::release);')"
  # the platform drops the acquire fence after a successful poll
  "poll-no-fence|genmc/platform.hpp|arrive_wait|
sub('__atomic_thread_fence(__ATOMIC_ACQUIRE);\n    if (genmc_waits)', 'if (genmc_waits)')"
  # the platform makes every fetch_add relaxed
  "rmw-relaxed|genmc/platform.hpp|arrive_wait completion|
sub('return __atomic_fetch_add(w, v, static_cast<int>(o));', 'return __atomic_fetch_add(w, v, __ATOMIC_RELAXED);')"
  # acq_rel fetch_adds lose their acquire half (the claim no longer sees the arrivals)
  "rmw-release-only|genmc/platform.hpp|completion|
sub('return __atomic_fetch_add(w, v, static_cast<int>(o));', 'return __atomic_fetch_add(w, v, o == mem_order::acq_rel ? __ATOMIC_RELEASE : static_cast<int>(o));')"
  # the platform makes every compare-and-swap relaxed
  "cas-relaxed|genmc/platform.hpp|tx tx_expect|
sub('desired, false, static_cast<int>(o),', 'desired, false, __ATOMIC_RELAXED,')"
  # a phase counts as claimed with a negative tx-count
  "claim-tx-le-0|include/xbarrier/protocol.hpp|tx_expect tx|
sub('return all_arrived(s) && tx(s) == 0; }', 'return all_arrived(s) && tx(s) <= 0; }')"
  # a phase counts as claimed with any tx-count
  "claim-ignores-tx|include/xbarrier/protocol.hpp|tx tx_expect|
sub('return all_arrived(s) && tx(s) == 0; }', 'return all_arrived(s); }')"
  # the arrival that sets Z claims the phase whatever tx-count is left
  "arrival-claims-ignoring-tx|include/xbarrier/protocol.hpp|tx tx_expect|
sub('const bool completes = zt == idle_tx;', 'const bool completes = (zt & W::z_bit) == 0;')"
  # the completion function runs after the publish
  "publish-before-step|include/xbarrier/protocol.hpp|completion|
sub('      if (lanes.leads()) completion();\n      const uint64_t delta = W::r_bit', '      const uint64_t delta = W::r_bit')
sub('      P::notify(w);\n      if (XB_CHECKED && W::all_arrived(now)', '      if (lanes.leads()) completion();\n      P::notify(w);\n      if (XB_CHECKED && W::all_arrived(now)')"
  # the publish does not flip R (the phase is never published)
  "publish-no-flip|include/xbarrier/protocol.hpp|arrive_and_wait|
sub('const uint64_t delta = W::r_bit - (uint64_t(W::expected(claimed_state)) << L::a_shift);', 'const uint64_t delta = 0 - (uint64_t(W::expected(claimed_state)) << L::a_shift);')"
  # a wave's leader adds one lane's arrival, not the group's
  "group-counts-one-lane|include/xbarrier/protocol.hpp|arrive_and_wait.wave|
sub('const uint64_t delta = n << L::a_shift;', 'const uint64_t delta = uint64_t(1) << L::a_shift;')"
  # the publish is a relaxed RMW (waiters miss the step's writes)
  "publish-relaxed|include/xbarrier/protocol.hpp|completion|
sub('const uint64_t found = leader_add(lanes, w, delta, mem_order::acq_rel);', 'const uint64_t found = leader_add(lanes, w, delta, mem_order::relaxed);')"
  # complete() does not complete a next phase its publish finds claimed
  "publish-once|include/xbarrier/protocol.hpp|early_completes|
sub('again = XB_UNLIKELY(!still_collecting(found, delta)) && W::claimed(now) && W::expected(claimed_state) != 0;', 'again = false;')"
  # the publish takes E from the word now, not from the claimed state
  "publish-fresh-expected|include/xbarrier/protocol.hpp|drop early_completes|
sub('const uint64_t delta = W::r_bit - (uint64_t(W::expected(claimed_state)) << L::a_shift);', 'const uint64_t delta = W::r_bit - (uint64_t(W::expected(P::template load<ms>(w, mem_order::relaxed))) << L::a_shift);')"
  # an early arrive() returns its token without waiting for the claim to go
  "early-no-wait|include/xbarrier/protocol.hpp|early_arrival|
sub('    if (XB_UNLIKELY(c.early) && !drop) wait_claim_published(single_lane(), w, c.r, XB_OP_ARRIVE);\n', '')"
  # an early arrival waits for R to flip instead of the claim to go
  "early-wait-for-flip|include/xbarrier/protocol.hpp|early_completes|
sub('return !W::claimed(s) || (s & W::r_bit) != r; }', 'return (s & W::r_bit) != r; }')"
  # an early arrive_and_wait waits on R without waiting for the claim to go
  "early-wait-skipped-aw|include/xbarrier/protocol.hpp|early_completes|
sub('      wait_claim_published(lanes, w, old & W::r_bit, XB_OP_ARRIVE);\n', '')"
  # an early arrival gets the parity of the claimed phase
  "early-old-parity|include/xbarrier/protocol.hpp|early_arrival|
sub('return ((c.early ? W::r_bit : 0) ^ c.r) != 0;', 'return c.r != 0;')"
  # arrive_and_drop also lowers the pending count of its own phase
  "drop-counts-twice|include/xbarrier/protocol.hpp|drop|
sub('const uint64_t delta = ((uint64_t(update) << L::a_shift) - (drop ? 1 : 0)) * n;', 'const uint64_t delta = ((uint64_t(update + drop) << L::a_shift) - (drop ? 1 : 0)) * n;')"
  # tx operations change the tx-count of a claimed word
  "tx-ignores-claim|include/xbarrier/protocol.hpp|tx_step|
sub('        if (W::claimed(old)) {  // the previous', '        if (false) {  // the previous')"
  # tx operations never run the completion step of a phase they claim
  "tx-never-completes|include/xbarrier/protocol.hpp|tx_expect|
sub('        if (W::claimed(now)) complete(single_lane(), w, now, completion);\n', '')"
  # a successful try_wait skips after_poll
  "try-wait-no-fence|include/xbarrier/protocol.hpp|try_wait|
sub('    P::template after_poll<ms>();\n    return true;\n', '    return true;\n')"
  # a successful try_wait_for skips after_poll
  "try-wait-for-no-fence|include/xbarrier/protocol.hpp|try_wait|
sub('        P::template after_poll<ms>();\n        return true;\n', '        return true;\n')"
  # a token's phase is taken from the count read after the arrival whenever the reads agree
  "token-phase-after|include/xbarrier/phase_count.hpp|stale_token|
sub(': (c2 & 1) == uint64_t(parity) ? token_phase{c2, true}', ': true ? token_phase{c2, true}')"
  # a token is stale when the count is two past it, whatever the word's parity
  "stale-ignores-parity|include/xbarrier/phase_count.hpp|stale_token|
sub('(int64_t(c - phase) == 2 && (phase & 1) == uint64_t(word_parity))', '(int64_t(c - phase) == 2)')"
  # direct block layout: a tx-count other than 0 holds no arrival back
  "direct-tx-holds-nothing|include/xbarrier/protocol.hpp|tx_expect.direct direct_tx|
sub('const int64_t held = (tx(base) == 0 && t != 0) ? 1 : (tx(base) != 0 && t == 0) ? -1 : 0;', 'const int64_t held = 0;')"
  # direct block layout: a tx operation that finds the next phase unarmed waits for R to
  # flip instead of for the arming (the phase it waits for needs its own update)
  "direct-tx-waits-for-flip|include/xbarrier/protocol.hpp|direct_tx_first|
sub('[r](uint64_t s) { return armed(s) || no_arrivals(s) || (s & r_bit) != r; }', '[r](uint64_t s) { return (s & r_bit) != r; }')"
  # direct layouts, fence form (AMDGPU's): arrive_and_wait's completer does not fence after
  # its release RMW (it returns without having acquired the phase's arrivals)
  "direct-completer-no-fence|include/xbarrier/protocol.hpp|direct direct.block arrive_and_wait.direct arrive_and_wait.direct.device|
sub('    if (!acquire_in_rmw) P::fence(ms, mem_order::acquire);\n', '')"
  # direct layouts, acquiring form (CUDA's, the host's): arrive_and_wait's arrival is
  # release only
  "direct-arrival-release|include/xbarrier/protocol.hpp|direct.acq direct.block.acq arrive_and_wait.direct.acq arrive_and_wait.direct.device.acq|
sub('const mem_order order = waits && acquire_in_rmw ? mem_order::acq_rel : mem_order::release;', 'const mem_order order = mem_order::release;')"
  # direct layouts: a drop that arms a phase arms it with E after its own drop (a drop
  # counted in a phase would lower that phase's own count)
  "direct-first-arm-own-drop|include/xbarrier/protocol.hpp|direct direct.block|
sub('const uint64_t base = armed(old) ? old : old + arming(expected_of(old));', 'const uint64_t base = armed(old) ? old : old + arming(expected_of(old) - (drop ? 1 : 0));')"
  # direct layouts, acquiring form: arrive_and_wait's arming is release only (it may be the
  # completer's acquire)
  "direct-first-arm-release|include/xbarrier/protocol.hpp|direct.acq direct.block.acq arrive_and_wait.direct.acq arrive_and_wait.direct.device.acq|
sub('const mem_order arm_order = waits && acquire_in_rmw ? mem_order::acq_rel : mem_order::release;', 'const mem_order arm_order = mem_order::release;')"
  # direct block layout: a tx operation never arms an untouched phase (it waits for an
  # arming that no arrival may come to make)
  "direct-tx-never-arms|include/xbarrier/protocol.hpp|direct_tx direct_tx_first direct_tx_arm_completes|
sub('while (armed(old) || first_of_phase(old)) {', 'while (armed(old)) {')
sub('return armed(s) || no_arrivals(s) || (s & r_bit) != r; }', 'return armed(s) || (s & r_bit) != r; }')"
  # direct block layout: a tx operation also arms a phase some arrival has reached (armed
  # twice, the phase expects E more)
  "direct-tx-arms-reached|include/xbarrier/protocol.hpp|direct_tx_first|
sub('while (armed(old) || first_of_phase(old)) {', 'while (armed(old) || (!armed(old) && expected_of(old) != 0)) {')"
  # direct layouts: every arrival that finds the phase unarmed arms it, not only the first
  "direct-every-unarmed-arrival-arms|include/xbarrier/protocol.hpp|direct direct.block|
sub('    if (no_arrivals(old)) {\n      if (expected_of(old) != 0) {  // the phase', '    if (!armed(old)) {\n      if (expected_of(old) != 0) {  // the phase')"
  # direct block layout: a tx operation's swap arms an untouched phase with one count too
  # many (as with E from before a drop counted in the phase before)
  "direct-tx-arm-count|include/xbarrier/protocol.hpp|direct_tx_arm_completes|
sub('const uint64_t base = armed(old) ? old : old + arming(expected_of(old));', 'const uint64_t base = armed(old) ? old : old + arming(expected_of(old) + 1);')"
  # direct layouts: a group's arrival counts one lane
  "direct-group-counts-one-lane|include/xbarrier/protocol.hpp|arrive_and_wait.direct.wave|
sub('const uint64_t delta = (uint64_t(update) << a_shift) * n;', 'const uint64_t delta = uint64_t(update) << a_shift;')"
  # split form: C is published to the other side's slot relaxed (the other side's waiters
  # miss this side's arrivals)
  "split-mirror-relaxed|include/xbarrier/engine_system.hpp|system_split|
sub('platform::store<ms>(mirror(w), c, mem_order::release);', 'platform::store<ms>(mirror(w), c, mem_order::relaxed);')"
  # split form: this side's own C is stored relaxed (its waiters miss its share's arrivals)
  "split-count-relaxed|include/xbarrier/engine_system.hpp|system_split.three|
sub('platform::store<ms>(count(w), c, mem_order::release);\n', 'platform::store<ms>(count(w), c, mem_order::relaxed);\n')"
  # split form: a wait returns once this side's share has completed the phase
  "split-done-ignores-other|include/xbarrier/engine_system.hpp|system_split|
sub('return platform::poll<ms>(count(w)) > phase && platform::poll<ms>(other(w)) > phase;', 'return platform::poll<ms>(count(w)) > phase;')"
  # split form: a token names C read after the arrival, without the parity correction (the
  # completer's own token would name the next phase). GenMC 0.11's confirmation annotation
  # crashes on the wait this makes (it compares a load with a masked load, and the pass
  # expects two loads); that pass only prunes, so the killer runs without it.
  "split-token-no-parity|include/xbarrier/engine_system.hpp|system_split|--disable-confirmation-annotation
sub('return token_of((c & 1) == uint64_t(parity) ? c : c - 1);', 'return token_of(c);')"
  # split form: a side whose participants have all left never sets `left` (the other side
  # waits for its phases forever)
  "split-left-never-set|include/xbarrier/engine_system.hpp|system_split_drop|
sub('const uint64_t c = gone ? next | left : next;', 'const uint64_t c = next;')"
  # split form: the step reads the share's expected count relaxed (the other side, released
  # by `left`, misses what a drop counted in the next phase wrote: the bug GenMC found)
  "split-step-reads-share-relaxed|include/xbarrier/engine_system.hpp|system_split_drop.early|
sub('share::W::expected(platform::load<ms>(w, mem_order::acquire))', 'share::W::expected(platform::load<ms>(w, mem_order::relaxed))')")

# The killers are checks by name, run with their program and flags.
declare -A CHECK_PROG CHECK_FLAGS
for entry in "${CHECKS[@]}"; do
  IFS='|' read -r name prog flags <<<"$entry"
  CHECK_PROG[$name]=$prog
  CHECK_FLAGS[$name]=$flags
done
mutants_run=0
echo "== mutants (each must be killed: some check reports an error)"
for entry in "${MUTANTS[@]}"; do
  head=${entry%%$'\n'*}
  code=${entry#*$'\n'}
  IFS='|' read -r name file killers opts <<<"$head"
  selected "$name" || continue
  mutants_run=$((mutants_run + 1))
  rm -rf "$WORK/m" && mkdir -p "$WORK/m"
  cp -r "$INC" "$WORK/m/include"
  cp -r "$SRC" "$WORK/m/genmc"
  if ! python3 - "$WORK/m/$file" "$code" <<'PY'
import sys
path, code = sys.argv[1], sys.argv[2]
s = open(path).read()
def sub(old, new):
    global s
    if s.count(old) != 1:
        sys.exit("genmc-check: %d matches of %r" % (s.count(old), old))
    s = s.replace(old, new)
exec(code)
open(path, "w").write(s)
PY
  then
    printf '%-26s %-5s %8s       %7s   FAIL (the patch no longer applies to %s)\n' "$name" - - - "$file"
    failures=$((failures + 1))
    continue
  fi
  status=""
  for check in $killers; do
    genmc_run rc11 "$WORK/m/include" "$WORK/m/genmc" "${CHECK_PROG[$check]}" "${CHECK_FLAGS[$check]}" "$opts"
    if [ "$RESULT" = error ]; then
      status="killed by $check: $DETAIL"
      break
    elif [ "$RESULT" = tool ]; then
      status="FAIL (GenMC did not run $check: $DETAIL)"
      break
    fi
  done
  [ -n "$status" ] || status="FAIL (survived: $killers)"
  case $status in killed*) ;; *) failures=$((failures + 1)) ;; esac
  printf '%-26s %-5s %8s execs %7ss  %s\n' "$name" rc11 "$EXECS" "$SECS" "$status"
done

if [ ${#ONLY[@]} -gt 0 ] && [ $((checks_run + mutants_run)) -eq 0 ]; then
  echo "genmc-check: no check or mutant is named ${ONLY[*]}" >&2
  exit 2
fi
elapsed=$(($(date +%s) - t0))
if [ "$failures" -eq 0 ]; then
  echo "genmc-check: OK: $checks_run check runs passed, $mutants_run mutants killed (${elapsed}s)"
else
  echo "genmc-check: FAILED: $failures of $checks_run check runs and $mutants_run mutants went wrong (${elapsed}s)"
  exit 1
fi
