// protocol_stress.cpp - a randomized stress test of the portable barrier protocol on host
// threads, meant to run under ThreadSanitizer (tests/protocol_tsan.rs builds and runs it).
//
//   protocol_stress [seed [min_ops [threads [round]]]]
//
// Plain std::threads drive xb::barrier objects directly: no fibers, no backend runtime, so
// xb::host::current() is null and the platform layer waits by spinning, then sched_yield.
// Every round plans its whole schedule first, from a generator seeded by (seed, round
// number) alone: who arrives how often, in how many calls, who drops out when, which
// tx-counts are expected and completed (or copied) by whom, how each thread waits. The
// threads then run that schedule concurrently, and only the interleaving is left to the OS.
// Rounds repeat, on fresh barriers of several scopes, until the planned operations reach
// min_ops (default 10^6), so a seed, min_ops and threads fix every round's schedule. A
// failure prints the command line that replays the whole run, and the one that replays just
// the failing round (the fourth argument: run only that round).
//
// What is covered, per phase k of a round:
//   - arrive(1) and arrive(n > 1); a thread may split its per-phase quota over several calls;
//   - arrive_and_drop at random phases (a thread's quota falls for later phases; a thread
//     whose quota reaches 0 leaves, and once every thread has left the round ends);
//   - xb::device::barrier_arrive_tx, xb::device::barrier_expect_tx, and the bytes' completion
//     by xb::device::memcpy_async_tx (a real copy into the round's "shared" buffer) or by
//     xb::detail::complete_tx, with the completing thread other than the expecting one and
//     racing it, so the tx-count is transiently negative; the completion split in two parts
//     (on a 16-byte boundary for copies); zero-byte expect_tx / arrive_tx / memcpy_async_tx /
//     complete_tx; a "late" transfer whose completion comes after the expecting op, by any
//     thread of the round (one that has already made its last arrival, or dropped out); a
//     "late expect" whose barrier_expect_tx comes after the completion of its bytes and after
//     all arrivals, so that the expect_tx itself completes the phase
//     (docs/mbarrier-semantics.md, P1);
//   - wait(token), wait_parity, try_wait loops, try_wait_for and try_wait_parity_for loops
//     with timeouts of 0 to 1 ms (some expire, some succeed), try_wait_parity loops,
//     arrive_and_wait, and "early" threads that learn from the completion function that
//     phase k is complete and arrive for k+1 while k's completion step still runs (the
//     protocol's claimed-but-unpublished state, header comment point 3.);
//   - probes of a phase that cannot be complete yet: try_wait / try_wait_parity, and
//     try_wait_for / try_wait_parity_for with a real timeout (1-20 us), which must expire;
//   - block-scope barriers with and without a completion function (tx allowed), device- and
//     system-scope barriers (the wide word layout) with and without one; unchecked, the
//     block and system ones without a completion function take the direct layouts.
//
// What is checked (any violation prints "protocol_stress: FAIL ..." and the replay command
// lines, and exits 1):
//   - the completion function runs exactly once per phase and in order: it keeps a plain
//     (non-atomic) phase counter, checks that every participant's data for that phase is
//     visible, that exactly the planned arrival units and tx bytes of phases 0..k were
//     issued before it ran, and every waiter checks the counter after its wait;
//   - happens-before: every participant writes a plain per-thread slot before arriving in
//     phase k, every tx completer writes a plain payload before complete_tx or copies it with
//     memcpy_async_tx; the completion function and every waiter of phase k read all of them
//     (TSAN flags a missing edge);
//   - every arrival token of phase k has parity k & 1;
//   - a phase never reports complete while one of its arrivals or tx completions is still
//     outstanding (the probes), and a try_wait_for that returns false has waited for at
//     least its timeout;
//   - the sequential model: before a round runs, the plan is executed op by op, in one legal
//     order, on a model barrier (pending arrivals, expected count, tx-count, phase). It gives
//     per phase the number of completions (1), the expected count after the phase's drops
//     and the tx balance (0), and the barrier's final state. After the round the run's
//     observations must equal it: completion-function invocations per phase (each
//     invocation is attributed to a phase by the arrival units issued before it), the
//     barrier word as each completion step found it (parity, all arrived, tx 0, the expected
//     count after the drops), the number of phases completed, and the final word (parity,
//     expected count, pending arrivals, tx-count).
// The protocol's own checked mode (XB_CHECKED=1) adds over-arrival, tx-range and deadlock
// (wait timeout) faults, which abort the process (after printing the replay lines).
//
// Early arrivals and the parity ABA. An arrival counted in phase k+1 while phase k is
// claimed waits inside protocol::arrive until the claim is published. An earlier protocol
// waited for R to flip instead; when that arrival completed k+1 as well, complete() published
// k and k+1 back to back, R flipped twice, and the thread waited forever. Early threads may
// therefore make any arrival (also their last of k+1) while k is claimed: the regression
// check for that fix. PROTOCOL_STRESS_FULL_EARLY=0 restricts early threads to operations that
// keep k+1 open (the schedule the old protocol survived).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <signal.h>
#include <sched.h>
#include <time.h>
#include <type_traits>
#include <unistd.h>

#include <xbarrier/barrier.hpp>

#include "stress_harness.hpp"

namespace {

constexpr int kMaxThreads = 16;
constexpr int kMaxTransfers = 4;      // up to 3 ordinary transfers and 1 late one per phase

// Which operation ran a completion step (statistics; set by each thread before each call).
enum StepOp : uint8_t { S_ARRIVE, S_ARRIVE_AND_WAIT, S_ARRIVE_TX, S_DROP, S_EXPECT, S_COMPLETE, S_COPY, S_COUNT };
const char* const kStepNames[S_COUNT] = {"arrive", "arrive_and_wait", "barrier_arrive_tx", "arrive_and_drop",
                                         "barrier_expect_tx", "complete_tx", "memcpy_async_tx"};
thread_local StepOp tls_op = S_ARRIVE;
thread_local uint64_t tls_call = 0, tls_step_call = ~uint64_t(0);  // barrier calls made; last with a step
void set_op(StepOp op) {
  tls_op = op;
  ++tls_call;
}
constexpr uint64_t kHangNs = 30000000000ull;  // our own polls give up after 30 s
constexpr uint64_t kRoundHangNs = 90000000000ull;  // a round (milliseconds, normally) after 90 s

uint64_t g_min_ops = 0;
int g_threads = 0;
bool g_full_early = true;
const char* g_argv0 = "protocol_stress";

void format_replay(int round) {
  set_replay("protocol_stress: replay the run: PROTOCOL_STRESS_FULL_EARLY=%d %s %llu %llu %d\n"
             "protocol_stress: replay round %d alone: PROTOCOL_STRESS_FULL_EARLY=%d %s %llu 0 %d %d\n"
             "protocol_stress: (the binary was built with -DXB_CHECKED=%d; tests/protocol_tsan.rs "
             "prints the compile command)\n",
             int(g_full_early), g_argv0, (unsigned long long)g_seed, (unsigned long long)g_min_ops, g_threads, round,
             int(g_full_early), g_argv0, (unsigned long long)g_seed, g_threads, round, int(XB_CHECKED));
}

// The values a participant / a tx completer writes for phase k; never 0.
uint64_t slot_value(int round, long k, int thread) {
  return mix(g_seed ^ mix(uint64_t(round) << 40 ^ uint64_t(k) << 8 ^ uint64_t(thread))) | 1;
}
uint64_t payload_value(int round, long k, int transfer) {
  return mix(~g_seed ^ mix(uint64_t(round) << 40 ^ uint64_t(k) << 8 ^ uint64_t(transfer))) | 1;
}
// The word a memcpy_async_tx of transfer `transfer` carries at byte `offset`.
uint64_t copy_word(int round, long k, int transfer, int offset) {
  return mix(payload_value(round, k, transfer) ^ uint64_t(offset));
}

// ---------------------------------------------------------------------------------------
// The plan

enum OpKind : uint8_t { OP_ARRIVE, OP_ARRIVE_TX, OP_DROP, OP_EXPECT, OP_COMPLETE, OP_PROBE, OP_PROBE_FOR };

struct Op {
  OpKind kind;
  int8_t transfer = -1;     // tx ops: index of the transfer in the phase (-1: a 0-byte op)
  bool post_late = false;   // after this op, tell the thread serving the late transfer
  bool first_part = false;  // OP_COMPLETE: write the payload before this part
  int32_t n = 0;            // arrival units
  int32_t tx = 0;           // tx bytes; OP_PROBE_FOR: the timeout in microseconds
  bool copy = false;        // OP_COMPLETE: by memcpy_async_tx (else complete_tx)
  int32_t offset = 0;       // OP_COMPLETE by copy: where this part starts in the transfer
};

enum WaitMode : uint8_t {
  W_WAIT,
  W_WAIT_PARITY,
  W_TRY_WAIT,
  W_TRY_WAIT_FOR,
  W_TRY_WAIT_PARITY,
  W_TRY_WAIT_PARITY_FOR,
  W_ARRIVE_AND_WAIT,
  W_EARLY,
  W_COUNT
};
const char* const kWaitNames[W_COUNT] = {"wait",           "wait_parity",          "try_wait",
                                         "try_wait_for",   "try_wait_parity",      "try_wait_parity_for",
                                         "arrive_and_wait", "early"};

struct ThreadPhase {
  std::vector<Op> ops;  // the last op is always an arrival (arrive, arrive_tx or drop)
  WaitMode wait = W_WAIT;
  uint8_t timeout_pick = 0;
  bool participant = false;   // expected in this phase (quota > 0)
  bool continuing = false;    // still expected in the next phase: waits for this one
  bool late_service = false;  // serves this phase's late transfer (its complete or its expect)
};

struct Transfer {
  int expecter, completer, bytes;
  bool late;         // the complete_tx comes after the expect, from any thread
  bool late_expect;  // the expect_tx comes after the complete_tx and all arrivals
  bool copy = false; // completed by memcpy_async_tx into the round's dst buffer
  int split = 0;     // completed in two parts, [0, split) and [split, bytes); 0: in one
};

constexpr int kMaxBytes = 4096;  // of one transfer

struct PhasePlan {
  std::vector<ThreadPhase> th;
  std::vector<Transfer> tr;
  int late = -1;  // index of the late transfer in tr
  bool linger = false;  // the completion function yields a few times after announcing
  uint64_t units = 0, tx = 0;
};

// The barrier word as the protocol's own accessors decode it (the model's observations).
struct WordState {
  bool parity = false;
  bool all_arrived = false;  // claimed layouts: Z
  bool direct = false;       // a direct layout: no Z; `arrived` is its A field
  long expected = -1, pending = -1, arrived = -1, tx = 0;
};
using Decode = WordState (*)(uint64_t);

// One invocation of the completion function: the phase it is attributed to (by the arrival
// units issued before it; -1: none matches) and the barrier word it found.
struct Call {
  long phase;
  WordState word;
};

enum RoundKind { K_BLOCK_COMPLETION, K_BLOCK_EMPTY, K_DEVICE_COMPLETION, K_SYSTEM_EMPTY, K_COUNT };
const char* const kKindNames[K_COUNT] = {"block+completion", "block", "device+completion", "system"};

struct Round {
  int id = 0, threads = 0;
  RoundKind kind = K_BLOCK_COMPLETION;
  bool has_completion = false, has_tx = false;
  long expected0 = 0;
  std::vector<PhasePlan> phases;
  std::vector<uint64_t> cum_units, cum_tx;  // through phase k inclusive
  uint64_t planned_ops = 0;

  // Plain data: TSAN reports any access to these that the barrier does not order.
  uint64_t slot[2][kMaxThreads] = {};
  uint64_t payload[2][kMaxTransfers] = {};
  long phases_done = 0;  // written only by the completion function
  uint64_t completed_by[S_COUNT] = {};  // likewise
  uint64_t back_to_back = 0;  // likewise: a second step in the same call (complete()'s loop)
  std::vector<Call> calls;    // likewise: every invocation, for the model
  alignas(16) unsigned char dst[2][kMaxTransfers][kMaxBytes];  // memcpy_async_tx targets ("shared memory")

  const uint64_t* word = nullptr;  // the barrier's word and its decoder, for the observations
  Decode decode = nullptr;

  // Side channels (atomics).
  std::atomic<long> completing{-1};  // last phase whose completion function has checked in
  std::atomic<long> late_post{-1};   // last phase whose late transfer has been expected
  std::atomic<long> expect_mark[kMaxTransfers];
  std::atomic<uint64_t> units{0}, tx_expected{0}, tx_completed{0};

  Round() {
    for (auto& m : expect_mark) m.store(-1, std::memory_order_relaxed);
  }

  void check_phase_data(long k, const char* who) const {
    const PhasePlan& ph = phases[size_t(k)];
    for (int i = 0; i < threads; ++i) {
      if (!ph.th[size_t(i)].participant) continue;
      const uint64_t want = slot_value(id, k, i);
      if (slot[k & 1][i] != want)
        fail(id, "%s of phase %ld: thread %d's data written before its arrival is not visible (%llx, want %llx)",
             who, k, i, (unsigned long long)slot[k & 1][i], (unsigned long long)want);
    }
    for (size_t t = 0; t < ph.tr.size(); ++t) {
      if (ph.tr[t].copy) {
        check_copy(k, int(t), who);
        continue;
      }
      const uint64_t want = payload_value(id, k, int(t));
      if (payload[k & 1][t] != want)
        fail(id, "%s of phase %ld: payload of transfer %zu (thread %d -> %d%s) written before complete_tx is not visible",
             who, k, t, ph.tr[t].expecter, ph.tr[t].completer,
             ph.tr[t].late ? ", late" : ph.tr[t].late_expect ? ", late expect" : "");
    }
  }

  // The words a memcpy_async_tx part [off, end) brings: its first and its last (TSAN sees
  // the whole copy, so a missing edge shows on these reads too).
  void check_copy(long k, int t, const char* who) const {
    const Transfer& tr = phases[size_t(k)].tr[size_t(t)];
    const int cuts[3] = {0, tr.split ? tr.split : tr.bytes, tr.bytes};
    for (int part = 0; part < (tr.split ? 2 : 1); ++part) {
      for (int off : {cuts[part], cuts[part + 1] - 8}) {
        uint64_t got;
        memcpy(&got, &dst[k & 1][t][off], sizeof got);
        const uint64_t want = copy_word(id, k, t, off);
        if (got != want)
          fail(id, "%s of phase %ld: byte %d of transfer %d (thread %d -> %d%s), copied by memcpy_async_tx, "
               "is not visible (%llx, want %llx)",
               who, k, off, t, tr.expecter, tr.completer, tr.late ? ", late" : tr.late_expect ? ", late expect" : "",
               (unsigned long long)got, (unsigned long long)want);
      }
    }
  }

  // The phase whose arrival units, with those of all phases before it, add up to `u`.
  long phase_of_units(uint64_t u) const {
    const auto it = std::lower_bound(cum_units.begin(), cum_units.end(), u);
    return it != cum_units.end() && *it == u ? long(it - cum_units.begin()) : -1;
  }

  void on_complete() {
    // First what the model compares after the round: the word as this step found it (nothing
    // of the next phase can have landed yet: early threads wait for `completing` below).
    calls.push_back(Call{phase_of_units(units.load(std::memory_order_acquire)),
                         decode(__atomic_load_n(word, __ATOMIC_RELAXED))});
    const long p = phases_done;
    if (p >= long(phases.size()))
      fail(id, "completion function ran for phase %ld, but only %zu phases can complete", p, phases.size());
    check_phase_data(p, "completion function");
    const uint64_t u = units.load(std::memory_order_acquire);
    const uint64_t te = tx_expected.load(std::memory_order_acquire);
    const uint64_t tc = tx_completed.load(std::memory_order_acquire);
    if (u != cum_units[size_t(p)])
      fail(id, "completion of phase %ld after %llu arrival units, phases 0..%ld expect exactly %llu", p,
           (unsigned long long)u, p, (unsigned long long)cum_units[size_t(p)]);
    if (te != cum_tx[size_t(p)] || tc != cum_tx[size_t(p)])
      fail(id, "completion of phase %ld with %llu tx bytes expected and %llu completed, phases 0..%ld have %llu", p,
           (unsigned long long)te, (unsigned long long)tc, p, (unsigned long long)cum_tx[size_t(p)]);
    phases_done = p + 1;
    ++completed_by[tls_op];
    if (tls_step_call == tls_call) ++back_to_back;
    tls_step_call = tls_call;
    completing.store(p, std::memory_order_release);
    if (phases[size_t(p)].linger)
      for (int i = 0; i < 3; ++i) sched_yield();
  }
};

struct Completion {
  Round* r = nullptr;
  void operator()() noexcept { r->on_complete(); }
};

void add_expect(Rng& rng, std::vector<Op>& ops, int t, int bytes, bool post) {
  std::vector<size_t> arrives;
  for (size_t j = 0; j < ops.size(); ++j)
    if (ops[j].kind == OP_ARRIVE) arrives.push_back(j);
  if (!arrives.empty() && rng.chance(1, 2)) {
    Op& op = ops[arrives[rng.below(uint32_t(arrives.size()))]];
    op.kind = OP_ARRIVE_TX;
    op.tx = bytes;
    op.transfer = int8_t(t);
    op.post_late = post;
    return;
  }
  Op op{OP_EXPECT};
  op.tx = bytes;
  op.transfer = int8_t(t);
  op.post_late = post;
  // Anywhere before the thread's last arrival: the phase cannot complete before it.
  ops.insert(ops.begin() + long(rng.below(uint32_t(ops.size()))), op);
}

// The completion of transfer t's bytes, by complete_tx or by memcpy_async_tx (`copy`), in
// one part or two (a copy's parts on a 16-byte boundary). Returns where the second part
// starts (0: one part).
int add_complete(Rng& rng, std::vector<Op>& ops, int t, int bytes, bool copy) {
  const bool split = rng.chance(1, 3) && bytes >= (copy ? 32 : 2);
  const int first = !split ? bytes
                    : copy ? 16 * (1 + int(rng.below(uint32_t(bytes / 16 - 1))))
                           : 1 + int(rng.below(uint32_t(bytes - 1)));
  Op op{OP_COMPLETE};
  op.transfer = int8_t(t);
  op.tx = first;
  op.first_part = true;
  op.copy = copy;
  // Often first thing in the phase, to race ahead of the expect (tx-count below 0).
  const size_t pos = rng.chance(1, 2) ? 0 : rng.below(uint32_t(ops.size()));
  ops.insert(ops.begin() + long(pos), op);
  if (split) {
    op.tx = bytes - first;
    op.offset = first;
    op.first_part = false;
    ops.insert(ops.begin() + long(rng.below(uint32_t(ops.size()))), op);
  }
  return split ? first : 0;
}

// Operations a thread is sure to execute (probes may be skipped, polls are counted apart).
uint64_t count_ops(const ThreadPhase& tp) {
  uint64_t n = 0;
  for (const Op& op : tp.ops) n += op.kind != OP_PROBE && op.kind != OP_PROBE_FOR;
  if (tp.late_service) n += 2;  // a probe and the tx op
  if (tp.participant && tp.continuing && tp.wait != W_ARRIVE_AND_WAIT) n += 1;  // the wait
  return n;
}

std::unique_ptr<Round> plan_round(Rng& rng, int id, int threads, RoundKind kind, bool full_early) {
  auto r = std::make_unique<Round>();
  r->id = id;
  r->threads = threads;
  r->kind = kind;
  r->has_completion = kind == K_BLOCK_COMPLETION || kind == K_DEVICE_COMPLETION;
  r->has_tx = kind == K_BLOCK_COMPLETION || kind == K_BLOCK_EMPTY;

  int quota[kMaxThreads] = {};
  for (int i = 0; i < threads; ++i) {
    const uint32_t x = rng.below(20);
    quota[i] = x < 10 ? 1 : x < 15 ? 2 : x < 18 ? 3 : 4 + int(rng.below(3));
    r->expected0 += quota[i];
  }
  const int max_phases = 32 + int(rng.below(480));
  // A third of the rounds never drop; the others drop at a random rate.
  const uint32_t drop_den = rng.chance(1, 3) ? 0 : 30 + rng.below(400);

  uint64_t cu = 0, ct = 0;
  for (int k = 0; k < max_phases; ++k) {
    std::vector<int> parts;
    for (int i = 0; i < threads; ++i)
      if (quota[i] > 0) parts.push_back(i);
    if (parts.empty()) break;  // everybody has dropped out: no more phases
    PhasePlan ph;
    ph.th.resize(size_t(threads));
    for (int i : parts) {
      ThreadPhase& tp = ph.th[size_t(i)];
      const int q = quota[i];
      tp.participant = true;
      int d = 0;
      if (drop_den && rng.below(drop_den) == 0) d = rng.chance(1, 3) ? q : 1 + int(rng.below(uint32_t(q)));
      for (int n = q - d; n > 0;) {
        const int c = rng.chance(1, 2) ? 1 : 1 + int(rng.below(uint32_t(n)));
        Op op{OP_ARRIVE};
        op.n = c;
        tp.ops.push_back(op);
        n -= c;
      }
      for (int j = 0; j < d; ++j) tp.ops.push_back(Op{OP_DROP, -1, false, false, 1, 0});
      for (size_t j = tp.ops.size(); j > 1; --j) std::swap(tp.ops[j - 1], tp.ops[rng.below(uint32_t(j))]);
      ph.units += uint64_t(q);
      quota[i] -= d;
      tp.continuing = quota[i] > 0;
    }
    if (r->has_tx) {
      const int regular = int(rng.below(4));
      for (int t = 0; t < regular; ++t) {
        const int e = parts[rng.below(uint32_t(parts.size()))];
        const int c = parts[rng.below(uint32_t(parts.size()))];
        const int bytes = 16 * (1 + int(rng.below(256)));
        const bool copy = rng.chance(1, 2);
        add_expect(rng, ph.th[size_t(e)].ops, t, bytes, false);
        const int split = add_complete(rng, ph.th[size_t(c)].ops, t, bytes, copy);
        ph.tr.push_back(Transfer{e, c, bytes, false, false, copy, split});
        ph.tx += uint64_t(bytes);
      }
      if (rng.chance(1, 2)) {
        // The late transfer: its second half comes from any thread of the round, possibly
        // after that thread's own last arrival, possibly from one that has dropped out. At
        // most one per phase, so that once all arrivals are in the tx-count is nonzero
        // (+bytes or -bytes) until it lands.
        const int t = int(ph.tr.size());
        const int bytes = 16 * (1 + int(rng.below(256)));
        const bool copy = rng.chance(1, 2);
        if (rng.chance(1, 2)) {
          // expect (or arrive_tx) by a participant, then complete_tx or memcpy_async_tx by
          // the server.
          const int e = parts[rng.below(uint32_t(parts.size()))];
          const int c = int(rng.below(uint32_t(threads)));
          add_expect(rng, ph.th[size_t(e)].ops, t, bytes, true);
          ph.th[size_t(c)].late_service = true;
          ph.tr.push_back(Transfer{e, c, bytes, true, false, copy, 0});
        } else {
          // complete_tx or memcpy_async_tx by a participant, then expect_tx by the server
          // (tx-count below 0 until then; the expect alone may complete the phase).
          const int c = parts[rng.below(uint32_t(parts.size()))];
          const int e = int(rng.below(uint32_t(threads)));
          std::vector<Op>& ops = ph.th[size_t(c)].ops;
          Op op{OP_COMPLETE};
          op.transfer = int8_t(t);
          op.tx = bytes;
          op.first_part = true;
          op.post_late = true;
          op.copy = copy;
          ops.insert(ops.begin() + long(rng.below(uint32_t(ops.size()))), op);
          ph.th[size_t(e)].late_service = true;
          ph.tr.push_back(Transfer{e, c, bytes, false, true, copy, 0});
        }
        ph.late = t;
        ph.tx += uint64_t(bytes);
      }
      if (rng.chance(1, 8)) {  // 0-byte tx ops behave as a plain arrive / nothing
        const int x = parts[rng.below(uint32_t(parts.size()))];
        std::vector<Op>& ops = ph.th[size_t(x)].ops;
        const uint32_t which = rng.below(4);
        Op op{which < 2 ? OP_EXPECT : OP_COMPLETE};
        op.tx = 0;
        op.copy = which == 3;
        if (which != 1) {  // expect_tx(0), complete_tx(0), memcpy_async_tx of 0 bytes
          ops.insert(ops.begin() + long(rng.below(uint32_t(ops.size()))), op);
        } else {  // barrier_arrive_tx(n, 0)
          for (Op& o : ops)
            if (o.kind == OP_ARRIVE) {
              o.kind = OP_ARRIVE_TX;
              o.tx = 0;
              break;
            }
        }
      }
    }
    for (int i : parts) {
      ThreadPhase& tp = ph.th[size_t(i)];
      if (rng.chance(1, 4)) {
        // try_wait(_parity), or try_wait_for / try_wait_parity_for with a timeout that must expire.
        Op probe{rng.chance(1, 2) ? OP_PROBE : OP_PROBE_FOR};
        const int32_t timeouts_us[3] = {1, 5, 20};
        probe.tx = timeouts_us[rng.below(3)];
        tp.ops.insert(tp.ops.begin() + long(rng.below(uint32_t(tp.ops.size()))), probe);
      }
      if (!tp.continuing) continue;
      WaitMode modes[W_COUNT + 2];
      int n = 0;
      for (int m = W_WAIT; m <= W_TRY_WAIT_PARITY_FOR; ++m) modes[n++] = WaitMode(m);
      const Op& last = tp.ops.back();
      if (last.kind == OP_ARRIVE && last.n == 1 && !tp.late_service) modes[n++] = W_ARRIVE_AND_WAIT;
      if (r->has_completion) {
        modes[n++] = W_EARLY;
        modes[n++] = W_EARLY;
      }
      tp.wait = modes[rng.below(uint32_t(n))];
      tp.timeout_pick = uint8_t(rng.below(4));
    }
    ph.linger = rng.chance(1, 5);
    cu += ph.units;
    ct += ph.tx;
    r->cum_units.push_back(cu);
    r->cum_tx.push_back(ct);
    for (const ThreadPhase& tp : ph.th) r->planned_ops += count_ops(tp);
    r->phases.push_back(std::move(ph));
  }
  // An early thread arrives for k+1 while phase k's completion step may still run, and its
  // first operation then waits inside the protocol for k to be published. If that first
  // operation is a plain arrive / arrive_and_drop that hands in its last arrival of k+1,
  // phase k+1 can complete without it and the parity flips back before it looks: it waits
  // forever (see "the parity ABA" at the top). Unless asked to exercise that, early threads
  // keep phase k+1 open until their first operation has returned.
  if (!full_early) {
    for (size_t k = 0; k + 1 < r->phases.size(); ++k) {
      for (int i = 0; i < threads; ++i) {
        ThreadPhase& tp = r->phases[k].th[size_t(i)];
        if (tp.wait != W_EARLY) continue;
        const ThreadPhase& next = r->phases[k + 1].th[size_t(i)];
        size_t first = 0;
        while (first < next.ops.size() && (next.ops[first].kind == OP_PROBE || next.ops[first].kind == OP_PROBE_FOR)) ++first;
        const OpKind kind = next.ops[first].kind;
        const bool last = first + 1 == next.ops.size();
        if (last && (kind == OP_ARRIVE || kind == OP_DROP) && !next.late_service) tp.wait = W_TRY_WAIT;
      }
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------
// The sequential model

// What the schedule must produce, from executing it op by op in one legal order on a model
// barrier: phase by phase, each participant's ops in thread order, then the phase's late
// operation (it comes after its first half and, for a late expect, after all arrivals).
struct Model {
  std::vector<int> completions;      // per phase: how many times it completes (1)
  std::vector<long> expected_after;  // per phase: the expected count once its drops are in
  std::vector<long> tx_balance;      // per phase: bytes expected minus bytes completed (0)
  long phases = 0;                   // phases completed in all
  // The barrier's final state: parity of the phase in progress, expected count, pending
  // arrivals (0 once everyone has dropped out: the barrier stays claimed), tx-count.
  bool final_parity = false;
  long final_expected = 0, final_pending = 0, final_tx = 0;
};

Model build_model(const Round& r) {
  Model m;
  const long P = long(r.phases.size());
  m.completions.assign(size_t(P), 0);
  m.expected_after.assign(size_t(P), -1);
  m.tx_balance.assign(size_t(P), 0);
  long expected = r.expected0, pending = expected, tx = 0, phase = 0, in = 0, out = 0;
  auto plan_error = [&](long k, const char* what) { fail(r.id, "internal: the plan of phase %ld %s", k, what); };
  for (long k = 0; k < P; ++k) {
    const PhasePlan& ph = r.phases[size_t(k)];
    if (phase != k) plan_error(k, "starts after a phase that never completed in the model");
    if (pending != long(ph.units)) plan_error(k, "plans arrival units that differ from its expected count");
    // Ops of the phase in sequential order; the phase must complete at the last, not before.
    std::vector<Op> seq;
    for (const ThreadPhase& tp : ph.th)
      for (const Op& op : tp.ops)
        if (op.kind != OP_PROBE && op.kind != OP_PROBE_FOR) seq.push_back(op);
    if (ph.late >= 0) {
      const Transfer& tr = ph.tr[size_t(ph.late)];
      Op op{tr.late_expect ? OP_EXPECT : OP_COMPLETE};
      op.tx = tr.bytes;
      seq.push_back(op);
    }
    in = out = 0;
    for (size_t j = 0; j < seq.size(); ++j) {
      const Op& op = seq[j];
      if (phase != k) plan_error(k, "completes in the model before its last operation");
      switch (op.kind) {
        case OP_ARRIVE: pending -= op.n; break;
        case OP_ARRIVE_TX: pending -= op.n; tx += op.tx; in += op.tx; break;
        case OP_DROP: pending -= 1; expected -= 1; break;
        case OP_EXPECT: tx += op.tx; in += op.tx; break;
        case OP_COMPLETE: tx -= op.tx; out += op.tx; break;
        default: break;
      }
      if (pending < 0) plan_error(k, "over-arrives in the model");
      if (pending == 0 && tx == 0) {  // the phase completes: the next one expects `expected`
        ++m.completions[size_t(k)];
        m.expected_after[size_t(k)] = expected;
        m.tx_balance[size_t(k)] = in - out;
        ++phase;
        pending = expected;
        tx = 0;
        // A barrier everyone dropped from expects nobody: it never completes again.
        if (expected == 0 && k + 1 < P) plan_error(k, "leaves nobody, yet more phases follow");
      }
    }
    if (phase != k + 1) plan_error(k, "does not complete in the model");
  }
  m.phases = phase;
  m.final_parity = phase & 1;
  m.final_expected = expected;
  m.final_pending = pending;
  m.final_tx = tx;
  return m;
}

// ---------------------------------------------------------------------------------------
// Running a round

struct Stats {
  uint64_t ops = 0, polls = 0;
  uint64_t arrive1 = 0, arrive_n = 0, drops = 0, arrive_tx = 0, expect_tx = 0, complete_tx = 0;
  uint64_t zero_tx = 0, complete_first = 0, late = 0, late_expect = 0, late_by_dropped = 0, probes = 0;
  uint64_t completed_by[S_COUNT] = {};
  uint64_t back_to_back = 0;
  uint64_t early = 0, early_unpublished = 0;
  uint64_t waits[W_COUNT] = {};
  uint64_t copies = 0, probes_for = 0, wait_for_true = 0, wait_for_expired = 0;

  void add(const Stats& o) {
    copies += o.copies;
    probes_for += o.probes_for;
    wait_for_true += o.wait_for_true;
    wait_for_expired += o.wait_for_expired;
    ops += o.ops;
    polls += o.polls;
    arrive1 += o.arrive1;
    arrive_n += o.arrive_n;
    drops += o.drops;
    arrive_tx += o.arrive_tx;
    expect_tx += o.expect_tx;
    complete_tx += o.complete_tx;
    zero_tx += o.zero_tx;
    complete_first += o.complete_first;
    late += o.late;
    late_expect += o.late_expect;
    for (int i = 0; i < S_COUNT; ++i) completed_by[i] += o.completed_by[i];
    late_by_dropped += o.late_by_dropped;
    probes += o.probes;
    early += o.early;
    early_unpublished += o.early_unpublished;
    for (int i = 0; i < W_COUNT; ++i) waits[i] += o.waits[i];
  }
};

// Back-off for our own polling loops, with a hang detector.
struct Poller {
  int round;
  const char* what;
  long k;
  int thread;
  uint32_t iteration = 0;
  uint64_t start = 0;
  void operator()(Stats& st) {
    ++st.polls;
    ++iteration;
    if (iteration < 8) return;
    if ((iteration & 255) == 0) {
      if (!start) start = now_ns();
      else if (now_ns() - start > kHangNs)
        fail(round, "thread %d: %s for phase %ld did not finish within 30 s (hang)", thread, what, k);
    }
    sched_yield();
  }
};

template <class B>
void check_token(const Round& r, const xb::arrival_token& tok, long k, int i, const char* op) {
  if (tok.parity() != bool(k & 1))
    fail(r.id, "thread %d: %s in phase %ld returned a token of parity %d, want %d", i, op, k, int(tok.parity()),
         int(k & 1));
}

alignas(16) thread_local unsigned char tls_src[kMaxBytes];  // memcpy_async_tx sources ("global memory")

// The tx functions compile only for barrier<thread_scope_block>, as cuda::device's. Only
// block-scope rounds plan tx operations (Round::has_tx); for the other barriers these
// wrappers stand in, and reaching one is a failure of the plan.
template <class B>
struct takes_tx : std::false_type {};
template <class C>
struct takes_tx<xb::barrier<xb::thread_scope_block, C>> : std::true_type {};

template <class B>
xb::arrival_token arrive_tx(B& b, const Round& r, ptrdiff_t n, ptrdiff_t tx) {
  if constexpr (takes_tx<B>::value) return xb::device::barrier_arrive_tx(b, n, tx);
  else fail(r.id, "barrier_arrive_tx planned on a barrier that has no tx-count");
}
template <class B>
void expect_tx(B& b, const Round& r, ptrdiff_t tx) {
  if constexpr (takes_tx<B>::value) xb::device::barrier_expect_tx(b, tx);
  else fail(r.id, "barrier_expect_tx planned on a barrier that has no tx-count");
}
template <class B>
void copy_tx(B& b, const Round& r, void* to, const void* from, size_t bytes) {
  if constexpr (takes_tx<B>::value) xb::device::memcpy_async_tx(to, from, xb::aligned_size_t<16>(bytes), b);
  else fail(r.id, "memcpy_async_tx planned on a barrier that has no tx-count");
}
template <class B>
void complete_tx(B& b, const Round& r, ptrdiff_t bytes) {
  if constexpr (takes_tx<B>::value) xb::detail::complete_tx(b, bytes);
  else fail(r.id, "complete_tx planned on a barrier that has no tx-count");
}

// Completes `bytes` of transfer t (-1: a 0-byte op) of phase k: complete_tx after writing
// the payload, or memcpy_async_tx of the part [offset, offset + bytes) into the round's dst.
// The caller has counted the bytes in r.tx_completed.
template <class B>
void complete_bytes(B& b, Round& r, long k, int t, int offset, int bytes, bool copy, bool first_part, Stats& st) {
  if (copy) {
    unsigned char* to = t >= 0 ? &r.dst[k & 1][t][offset] : &r.dst[k & 1][0][0];
    if (t >= 0) {
      for (int off : {offset, offset + bytes - 8}) {
        const uint64_t v = copy_word(r.id, k, t, off);
        memcpy(&tls_src[off], &v, sizeof v);
      }
    }
    set_op(S_COPY);
    copy_tx(b, r, to, &tls_src[offset], size_t(bytes));
    ++st.copies;
  } else {
    if (first_part && t >= 0) r.payload[k & 1][t] = payload_value(r.id, k, t);
    set_op(S_COMPLETE);
    complete_tx(b, r, bytes);
    ++st.complete_tx;
  }
}

// try_wait_for(token) or try_wait_parity_for with `timeout_ns`; a false result must come
// after the whole timeout.
template <class B>
bool wait_for(const B& b, const Round& r, long k, int i, const xb::arrival_token* tok, bool par, int64_t timeout_ns,
              Stats& st) {
  const uint64_t start = now_ns();
  bool ok;
  if (tok && timeout_ns % 1000 == 0) ok = b.try_wait_for(xb::arrival_token(*tok), std::chrono::microseconds(timeout_ns / 1000));
  else if (tok) ok = b.try_wait_for(xb::arrival_token(*tok), xb::nanoseconds(timeout_ns));
  else ok = b.try_wait_parity_for(par, xb::nanoseconds(timeout_ns));
  const uint64_t spent = now_ns() - start;
  if (!ok && spent < uint64_t(timeout_ns))
    fail(r.id, "thread %d: %s for phase %ld returned false after %llu ns, before its timeout of %lld ns", i,
         tok ? "try_wait_for" : "try_wait_parity_for", k, (unsigned long long)spent, (long long)timeout_ns);
  ++(ok ? st.wait_for_true : st.wait_for_expired);
  return ok;
}

template <class B>
void serve_late(B& b, Round& r, long k, int i, bool participant, Stats& st) {
  const PhasePlan& ph = r.phases[size_t(k)];
  const Transfer& tr = ph.tr[size_t(ph.late)];
  Poller poll{r.id, tr.late_expect ? "waiting for the late expect's complete_tx" : "waiting for the late transfer's expect",
              k, i};
  for (;;) {
    const long posted = r.late_post.load(std::memory_order_acquire);
    if (posted == k) break;
    if (posted > k) fail(r.id, "thread %d: late transfer of phase %ld skipped (phase %ld posted)", i, k, posted);
    poll(st);
  }
  // The first half has landed and ours is outstanding: phase k cannot be complete.
  ++st.probes;
  ++st.ops;
  if (b.try_wait_parity(bool(k & 1)))
    fail(r.id, "phase %ld reported complete while the %s of %d tx bytes was outstanding", k,
         tr.late_expect ? "expect" : "completion", tr.bytes);
  if (tr.late_expect) {
    r.tx_expected.fetch_add(uint64_t(tr.bytes), std::memory_order_relaxed);
    set_op(S_EXPECT);
    expect_tx(b, r, tr.bytes);
    ++st.expect_tx;
    ++st.late_expect;
  } else {
    r.tx_completed.fetch_add(uint64_t(tr.bytes), std::memory_order_relaxed);
    complete_bytes(b, r, k, ph.late, 0, tr.bytes, tr.copy, true, st);
    ++st.late;
  }
  ++st.ops;
  if (!participant) ++st.late_by_dropped;
}

template <class B>
void worker(B& b, Round& r, int i, Stats& st) {
  const long P = long(r.phases.size());
  bool published = true;  // the previous phase is known to be published (not just claimed)
  for (long k = 0; k < P; ++k) {
    const PhasePlan& ph = r.phases[size_t(k)];
    const ThreadPhase& tp = ph.th[size_t(i)];
    const bool par = k & 1;
    if (!tp.participant) {
      if (tp.late_service) serve_late(b, r, k, i, false, st);
      continue;
    }
    r.slot[k & 1][i] = slot_value(r.id, k, i);
    xb::arrival_token tok;
    bool have_tok = false, waited = false;
    for (size_t j = 0; j < tp.ops.size(); ++j) {
      const Op& op = tp.ops[j];
      const bool last = j + 1 == tp.ops.size();
      switch (op.kind) {
        case OP_ARRIVE:
          r.units.fetch_add(uint64_t(op.n), std::memory_order_relaxed);
          if (last && tp.wait == W_ARRIVE_AND_WAIT) {
            set_op(S_ARRIVE_AND_WAIT);
            b.arrive_and_wait();
            waited = true;
            ++st.waits[W_ARRIVE_AND_WAIT];
          } else {
            set_op(S_ARRIVE);
            tok = b.arrive(op.n);
            have_tok = true;
            check_token<B>(r, tok, k, i, "arrive");
          }
          ++(op.n == 1 ? st.arrive1 : st.arrive_n);
          break;
        case OP_ARRIVE_TX:
          r.units.fetch_add(uint64_t(op.n), std::memory_order_relaxed);
          r.tx_expected.fetch_add(uint64_t(op.tx), std::memory_order_relaxed);
          if (op.transfer >= 0) r.expect_mark[op.transfer].store(k, std::memory_order_seq_cst);
          set_op(S_ARRIVE_TX);
          tok = arrive_tx(b, r, op.n, op.tx);
          have_tok = true;
          check_token<B>(r, tok, k, i, "barrier_arrive_tx");
          if (op.post_late) r.late_post.store(k, std::memory_order_release);
          ++st.arrive_tx;
          if (op.tx == 0) ++st.zero_tx;
          break;
        case OP_DROP:
          r.units.fetch_add(1, std::memory_order_relaxed);
          set_op(S_DROP);
          b.arrive_and_drop();
          ++st.drops;
          break;
        case OP_EXPECT:
          r.tx_expected.fetch_add(uint64_t(op.tx), std::memory_order_relaxed);
          if (op.transfer >= 0) r.expect_mark[op.transfer].store(k, std::memory_order_seq_cst);
          set_op(S_EXPECT);
          expect_tx(b, r, op.tx);
          if (op.post_late) r.late_post.store(k, std::memory_order_release);
          ++st.expect_tx;
          if (op.tx == 0) ++st.zero_tx;
          break;
        case OP_COMPLETE:
          r.tx_completed.fetch_add(uint64_t(op.tx), std::memory_order_relaxed);
          complete_bytes(b, r, k, op.transfer, op.offset, op.tx, op.copy, op.first_part, st);
          if (op.tx == 0) ++st.zero_tx;
          if (op.post_late) r.late_post.store(k, std::memory_order_release);
          // The expecter marks before its expect: no mark yet means the complete came first
          // and the phase's tx-count went below zero.
          if (op.first_part && op.transfer >= 0 && r.expect_mark[op.transfer].load(std::memory_order_seq_cst) != k)
            ++st.complete_first;
          break;
        case OP_PROBE:
          // Our last arrival is still to come: phase k cannot be complete. Only meaningful
          // once phase k-1 is known to be published (an early thread may not know that yet).
          if (!published) continue;
          ++st.probes;
          if (have_tok ? b.try_wait(xb::arrival_token(tok)) : b.try_wait_parity(par))
            fail(r.id, "phase %ld reported complete before thread %d's last arrival (op %zu of %zu)", k, i, j,
                 tp.ops.size());
          break;
        case OP_PROBE_FOR:
          // The same with a timeout, which must expire (and take its whole length).
          if (!published) continue;
          ++st.probes_for;
          if (wait_for(b, r, k, i, have_tok ? &tok : nullptr, par, int64_t(op.tx) * 1000, st))
            fail(r.id, "phase %ld: %s reported it complete before thread %d's last arrival (op %zu of %zu)", k,
                 have_tok ? "try_wait_for" : "try_wait_parity_for", i, j, tp.ops.size());
          break;
      }
      ++st.ops;
      // An arrival or tx op that finds phase k-1 claimed waits for its publish (it needs the
      // phase's parity); arrive_and_drop returns nothing, so it need not wait.
      if (op.kind != OP_DROP) published = true;
    }
    if (tp.late_service) serve_late(b, r, k, i, true, st);
    if (!tp.continuing) continue;  // dropped out: no token, no wait (later phases may alias)

    bool early = false;
    if (!waited) {
      if (!have_tok) fail(r.id, "internal: thread %d has no token in phase %ld", i, k);
      Poller poll{r.id, kWaitNames[tp.wait], k, i};
      const uint8_t tp_ = tp.timeout_pick;
      switch (tp.wait) {
        case W_WAIT:
          b.wait(std::move(tok));
          break;
        case W_WAIT_PARITY:
          b.wait_parity(par);
          break;
        case W_TRY_WAIT:
          while (!b.try_wait(xb::arrival_token(tok))) poll(st);
          break;
        case W_TRY_WAIT_FOR: {
          const int64_t timeouts_ns[4] = {0, 2000, 100000, 1000000};
          while (!wait_for(b, r, k, i, &tok, par, timeouts_ns[tp_], st)) poll(st);
          break;
        }
        case W_TRY_WAIT_PARITY:
          while (!b.try_wait_parity(par)) poll(st);
          break;
        case W_TRY_WAIT_PARITY_FOR: {
          const int64_t timeouts_ns[4] = {0, 1000, 20000, 200000};
          while (!wait_for(b, r, k, i, nullptr, par, timeouts_ns[tp_], st)) poll(st);
          break;
        }
        case W_EARLY:
          for (;;) {
            if (r.completing.load(std::memory_order_acquire) >= k) {
              early = true;
              break;
            }
            if (b.try_wait(xb::arrival_token(tok))) break;
            poll(st);
          }
          break;
        default:
          fail(r.id, "internal: bad wait mode");
      }
      ++st.waits[tp.wait];
      ++st.ops;
    }
    // Phase k is complete: its completion function has run exactly once, and everything
    // its participants and tx completers wrote before their arrivals is visible.
    if (r.has_completion && r.phases_done != k + 1)
      fail(r.id, "thread %d: after its wait (%s) for phase %ld the completion function has run for %ld phases",
           i, kWaitNames[tp.wait], k, r.phases_done);
    r.check_phase_data(k, "waiter");
    if (early) {
      ++st.early;
      published = false;
      if (!b.try_wait_parity(par)) ++st.early_unpublished;  // claimed, not yet published
    } else {
      published = true;
    }
  }
}

// Decodes barrier B's word with the accessors of the layout its engine uses.
template <class B>
struct word_of;
template <xb::thread_scope S, class C>
struct word_of<xb::barrier<S, C>> {
  using engine = typename xb::detail::engine_for<S, C>::type;
  // A barrier of system scope runs the direct engine behind system_engine (its shared form).
  static constexpr bool direct = std::is_same<engine, xb::detail::direct_engine<S>>::value ||
                                 std::is_same<engine, xb::detail::system_engine<xb::detail::direct_engine<S>>>::value;
  static WordState decode(uint64_t s) {
    WordState w;
    if constexpr (direct) {
      using D = xb::detail::direct_protocol<xb::detail::platform, S>;
      w.direct = true;
      w.parity = D::parity(s);
      w.expected = long(D::expected_of(s));
      w.arrived = long(D::arrivals_of(s));
      w.tx = long(D::tx(s));
      w.pending = long(D::pending(s));
    } else {
      using W = typename xb::detail::protocol<xb::detail::platform, S>::W;
      w.parity = W::parity(s);
      w.all_arrived = W::all_arrived(s);
      w.expected = long(W::expected(s));
      w.pending = long(W::pending(s));
      w.arrived = long(W::arrived(s));
      w.tx = long(W::tx(s));
    }
    return w;
  }
};

// After the round: what the run observed against what the model says.
void check_model(const Round& r, const Model& m, const WordState& final_word) {
  const long P = long(r.phases.size());
  if (m.phases != P) fail(r.id, "model: %ld phases complete in the sequential model, %ld are planned", m.phases, P);
  if (r.has_completion) {
    std::vector<int> seen(size_t(P), 0);
    for (size_t c = 0; c < r.calls.size(); ++c) {
      const Call& call = r.calls[c];
      if (call.phase < 0)
        fail(r.id, "model: completion step %zu ran after a number of arrival units that ends no phase", c);
      ++seen[size_t(call.phase)];
      const WordState& w = call.word;
      const long k = call.phase;
      // The claimed word: parity of phase k, all arrived, no arrival of k+1 yet, tx balance
      // as the model's, and the expected count the model has after k's drops.
      if (w.parity != bool(k & 1) || !w.all_arrived || w.arrived != 0 || w.tx != m.tx_balance[size_t(k)] ||
          w.expected != m.expected_after[size_t(k)])
        fail(r.id,
             "model: the completion step of phase %ld found parity %d, all arrived %d, %ld arrivals of the next "
             "phase, tx %ld, expected %ld; the model has parity %d, all arrived 1, 0, tx %ld, expected %ld",
             k, int(w.parity), int(w.all_arrived), w.arrived, w.tx, w.expected, int(k & 1), m.tx_balance[size_t(k)],
             m.expected_after[size_t(k)]);
    }
    for (long k = 0; k < P; ++k)
      if (seen[size_t(k)] != m.completions[size_t(k)])
        fail(r.id, "model: phase %ld completed %d time(s) (completion function invocations), the model says %d", k,
             seen[size_t(k)], m.completions[size_t(k)]);
  }
  const WordState& w = final_word;
  // The direct layouts decode alike armed or not: pending is E less the arrivals counted so
  // far in a phase no first arrival has armed yet.
  const bool same = w.parity == m.final_parity && w.expected == m.final_expected && w.pending == m.final_pending &&
                    w.tx == m.final_tx;
  if (!same)
    fail(r.id,
         "model: final barrier state parity %d, expected %ld, pending %ld, tx %ld (arrivals field %ld); the model "
         "has parity %d (%ld phases), expected %ld, pending %ld, tx %ld",
         int(w.parity), w.expected, w.pending, w.tx, w.arrived, int(m.final_parity), m.phases, m.final_expected,
         m.final_pending, m.final_tx);
}

template <class B, bool HasCompletion>
void run_round(B& b, Round& r, Stats& total) {
  const Model model = build_model(r);
  r.word = xb::detail::barrier_access::word(b);
  r.decode = &word_of<B>::decode;
  r.calls.reserve(r.phases.size() + 8);
  if constexpr (HasCompletion) {
    init(&b, r.expected0, Completion{&r});
  } else {
    init(&b, r.expected0);
  }
  // A fresh barrier: parity 1 counts as complete, parity 0 (phase 0) does not.
  if (!b.try_wait_parity(true) || b.try_wait_parity(false))
    fail(r.id, "fresh barrier: try_wait_parity(1)=%d try_wait_parity(0)=%d, want 1 and 0", int(b.try_wait_parity(true)),
         int(b.try_wait_parity(false)));
  std::vector<Stats> stats(size_t(r.threads));
  std::vector<std::thread> ts;
  for (int i = 0; i < r.threads; ++i) ts.emplace_back([&b, &r, i, &stats] { worker(b, r, i, stats[size_t(i)]); });
  for (auto& t : ts) t.join();
  for (auto& s : stats) total.add(s);
  for (int i = 0; i < S_COUNT; ++i) total.completed_by[i] += r.completed_by[i];
  total.back_to_back += r.back_to_back;

  // The model first: it names the phase and the field that differ.
  check_model(r, model, word_of<B>::decode(__atomic_load_n(r.word, __ATOMIC_RELAXED)));
  const long P = long(r.phases.size());
  if (r.has_completion && r.phases_done != P)
    fail(r.id, "round end: completion function ran for %ld phases, planned %ld", r.phases_done, P);
  if (r.units.load() != r.cum_units.back() || r.tx_expected.load() != r.cum_tx.back() ||
      r.tx_completed.load() != r.cum_tx.back())
    fail(r.id, "round end: issued units/tx do not match the plan");
  // Exactly P phases are complete: phase P-1 is, phase P is not.
  if (!b.try_wait_parity(bool((P - 1) & 1)) || b.try_wait_parity(bool(P & 1)))
    fail(r.id, "round end: barrier parity says a phase too many or too few completed (P=%ld)", P);
}

// Global objects: "shared memory" for a block-scope barrier without a backend.
xb::barrier<xb::thread_scope_block, Completion> g_block_completion;
xb::barrier<xb::thread_scope_block> g_block_empty;
xb::barrier<xb::thread_scope_device, Completion> g_device_completion;
xb::barrier<xb::thread_scope_system> g_system_empty;

// Each round's generator depends on the seed and the round number alone, so that one round
// replays without the rounds before it.
uint64_t round_seed(int round) { return mix(g_seed ^ mix(0x726f756e64ull + uint64_t(round))); }

}  // namespace

int main(int argc, char** argv) {
  g_argv0 = argv[0];
  g_program = "protocol_stress";
  g_seed = argc > 1 ? strtoull(argv[1], nullptr, 0) : 0x5eedba77ull;
  const uint64_t min_ops = argc > 2 ? strtoull(argv[2], nullptr, 0) : 1000000ull;
  const int threads = argc > 3 ? atoi(argv[3]) : 4;
  const int only_round = argc > 4 ? atoi(argv[4]) : 0;  // replay this round alone
  const char* fe = getenv("PROTOCOL_STRESS_FULL_EARLY");
  const bool full_early = !(fe && *fe == '0');  // on by default since the fix; =0 restricts
  if (threads < 1 || threads > kMaxThreads || only_round < 0) {
    fprintf(stderr, "usage: protocol_stress [seed [min_ops [threads (1..%d) [round]]]]\n", kMaxThreads);
    return 2;
  }
  g_min_ops = min_ops;
  g_threads = threads;
  g_full_early = full_early;
  struct sigaction sa = {};
  sa.sa_handler = on_abort;
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGABRT, &sa, nullptr);
  printf("protocol_stress: seed=%llu min_ops=%llu threads=%d checked=%d full_early=%d%s\n",
         (unsigned long long)g_seed, (unsigned long long)min_ops, threads, int(XB_CHECKED), int(full_early),
         only_round ? " (one round)" : "");
  fflush(stdout);

  Stats total;
  uint64_t phases = 0, planned = 0;
  int rounds = 0;
  int kind_rounds[K_COUNT] = {};
  const uint64_t t0 = now_ns();
  // Until the planned operations reach min_ops (executed ones are at least as many: probes
  // and polls come on top), so that seed, min_ops and threads fix the rounds that run.
  std::thread dog(watchdog, kRoundHangNs);
  for (int id = only_round ? only_round : 1; only_round ? id == only_round : planned < min_ops; ++id) {
    format_replay(id);
    g_round_start.store(now_ns(), std::memory_order_relaxed);
    g_round.store(id, std::memory_order_relaxed);
    Rng rng(round_seed(id));
    const uint32_t x = rng.below(10);
    const RoundKind kind = x < 5 ? K_BLOCK_COMPLETION : x < 7 ? K_BLOCK_EMPTY : x < 9 ? K_DEVICE_COMPLETION : K_SYSTEM_EMPTY;
    auto r = plan_round(rng, id, threads, kind, full_early);
    switch (kind) {
      case K_BLOCK_COMPLETION: run_round<decltype(g_block_completion), true>(g_block_completion, *r, total); break;
      case K_BLOCK_EMPTY: run_round<decltype(g_block_empty), false>(g_block_empty, *r, total); break;
      case K_DEVICE_COMPLETION: run_round<decltype(g_device_completion), true>(g_device_completion, *r, total); break;
      default: run_round<decltype(g_system_empty), false>(g_system_empty, *r, total); break;
    }
    phases += r->phases.size();
    planned += r->planned_ops;
    ++rounds;
    ++kind_rounds[kind];
  }
  g_round.store(0, std::memory_order_relaxed);
  g_done.store(true, std::memory_order_relaxed);
  dog.join();  // a thread still running at exit costs TSAN's atexit_sleep_ms (1 s)
  const double secs = double(now_ns() - t0) / 1e9;
  if (total.ops < planned) fail(0, "executed %llu ops, planned %llu", (unsigned long long)total.ops, (unsigned long long)planned);

  printf("rounds: %d (", rounds);
  for (int k = 0; k < K_COUNT; ++k) printf("%s%s %d", k ? ", " : "", kKindNames[k], kind_rounds[k]);
  printf(")\n");
  printf("arrivals: arrive(1) %llu, arrive(n>1) %llu, arrive_and_drop %llu, barrier_arrive_tx %llu\n",
         (unsigned long long)total.arrive1, (unsigned long long)total.arrive_n, (unsigned long long)total.drops,
         (unsigned long long)total.arrive_tx);
  printf("tx: barrier_expect_tx %llu, complete_tx %llu, memcpy_async_tx %llu, before the expect %llu, 0-byte %llu; "
         "late completion %llu, late expect %llu, of those by a dropped-out thread %llu\n",
         (unsigned long long)total.expect_tx, (unsigned long long)total.complete_tx, (unsigned long long)total.copies,
         (unsigned long long)total.complete_first, (unsigned long long)total.zero_tx, (unsigned long long)total.late,
         (unsigned long long)total.late_expect, (unsigned long long)total.late_by_dropped);
  printf("completion steps run by:");
  for (int i = 0; i < S_COUNT; ++i)
    printf("%s %s %llu", i ? "," : "", kStepNames[i], (unsigned long long)total.completed_by[i]);
  printf("; two phases in one call %llu\n", (unsigned long long)total.back_to_back);
  printf("waits:");
  for (int w = 0; w < W_COUNT; ++w) printf("%s %s %llu", w ? "," : "", kWaitNames[w], (unsigned long long)total.waits[w]);
  printf("\ntry_wait_for / try_wait_parity_for: %llu returned true, %llu expired after their whole timeout "
         "(%llu of them probes of a phase that could not be complete yet)\n",
         (unsigned long long)total.wait_for_true, (unsigned long long)total.wait_for_expired,
         (unsigned long long)total.probes_for);
  printf("early arrivals while the completion step ran: %llu (phase not yet published: %llu); "
         "probes %llu; polls %llu\n",
         (unsigned long long)total.early, (unsigned long long)total.early_unpublished, (unsigned long long)total.probes,
         (unsigned long long)total.polls);
  printf("model: %llu phases and %d final barrier states as the sequential model has them\n",
         (unsigned long long)phases, rounds);
  printf("protocol_stress: OK ops=%llu phases=%llu rounds=%d threads=%d seed=%llu time=%.2fs\n",
         (unsigned long long)total.ops, (unsigned long long)phases, rounds, threads, (unsigned long long)g_seed, secs);
  return 0;
}
