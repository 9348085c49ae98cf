// protocol_stress.cpp - a randomized stress test of the portable barrier protocol on host
// threads, meant to run under ThreadSanitizer (tests/protocol_tsan.rs builds and runs it).
//
//   protocol_stress [seed [min_ops [threads]]]
//
// Plain std::threads drive xb::barrier objects directly: no fibers, no backend runtime, so
// xb::host::current() is null and the platform layer waits by spinning, then sched_yield.
// Every round plans its whole schedule from the seed first (who arrives how often, in how
// many calls, who drops out when, which tx-counts are expected and completed by whom, how
// each thread waits); the threads then run that schedule concurrently, and only the
// interleaving is left to the OS. Rounds repeat, on fresh barriers of several scopes, until
// at least min_ops (default 10^6) barrier operations have been executed.
//
// What is covered, per phase k of a round:
//   - arrive(1) and arrive(n > 1); a thread may split its per-phase quota over several calls;
//   - arrive_and_drop at random phases (a thread's quota falls for later phases; a thread
//     whose quota reaches 0 leaves, and once every thread has left the round ends);
//   - xb::device::barrier_arrive_tx, xb::device::barrier_expect_tx and
//     xb::detail::complete_tx, with the completing thread other than the expecting one and
//     racing it, so the tx-count is transiently negative; complete_tx split in two parts;
//     zero-byte expect_tx / arrive_tx; a "late" transfer whose complete_tx comes after the
//     expecting op, by any thread of the round (one that has already made its last arrival,
//     or dropped out); a "late expect" whose barrier_expect_tx comes after the completion of
//     its bytes and after all arrivals, so that the expect_tx itself completes the phase
//     (MBARRIER-GROUND-TRUTH.md P1);
//   - wait(token), wait_parity, try_wait loops, try_wait_for loops, try_wait_parity(_for)
//     loops, arrive_and_wait, and "early" threads that learn from the completion function
//     that phase k is complete and arrive for k+1 while k's completion step still runs
//     (the protocol's claimed-but-unpublished state, header comment point 3.);
//   - block-scope barriers with and without a completion function (tx allowed), device- and
//     system-scope barriers (the wide word layout) with and without one.
//
// What is checked (any violation prints "protocol_stress: FAIL ..." and exits 1):
//   - the completion function runs exactly once per phase and in order: it keeps a plain
//     (non-atomic) phase counter, checks that every participant's data for that phase is
//     visible, that exactly the planned arrival units and tx bytes of phases 0..k were
//     issued before it ran, and every waiter checks the counter after its wait;
//   - happens-before: every participant writes a plain per-thread slot before arriving in
//     phase k, every tx completer writes a plain payload before complete_tx; the completion
//     function and every waiter of phase k read all of them (TSAN flags a missing edge);
//   - every arrival token of phase k has parity k & 1;
//   - a phase never reports complete while one of its arrivals or tx completions is still
//     outstanding (try_wait_parity probes);
//   - after the round: exactly the planned number of phases completed, no more.
// The protocol's own checked mode (XB_CHECKED=1) adds over-arrival, tx-range and deadlock
// (wait timeout) faults, which abort the process.
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
#include <memory>
#include <thread>
#include <vector>

#include <sched.h>
#include <time.h>

#include <xbarrier/barrier.hpp>

namespace {

constexpr int kMaxThreads = 16;
constexpr int kMaxTransfers = 4;      // up to 3 ordinary transfers and 1 late one per phase

// Which operation ran a completion step (statistics; set by each thread before each call).
enum StepOp : uint8_t { S_ARRIVE, S_ARRIVE_AND_WAIT, S_ARRIVE_TX, S_DROP, S_EXPECT, S_COMPLETE, S_COUNT };
const char* const kStepNames[S_COUNT] = {"arrive", "arrive_and_wait", "barrier_arrive_tx", "arrive_and_drop",
                                         "barrier_expect_tx", "complete_tx"};
thread_local StepOp tls_op = S_ARRIVE;
thread_local uint64_t tls_call = 0, tls_step_call = ~uint64_t(0);  // barrier calls made; last with a step
void set_op(StepOp op) {
  tls_op = op;
  ++tls_call;
}
constexpr uint64_t kHangNs = 30000000000ull;  // our own polls give up after 30 s

uint64_t g_seed = 0;

[[noreturn]] void fail(int round, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "protocol_stress: FAIL seed=%llu round=%d: %s\n",
          static_cast<unsigned long long>(g_seed), round, buf);
  fflush(stderr);
  std::_Exit(1);
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() { return mix(s += 0x9e3779b97f4a7c15ull); }
  uint32_t below(uint32_t n) { return n ? uint32_t(next() % n) : 0; }
  bool chance(uint32_t num, uint32_t den) { return below(den) < num; }
};

// The values a participant / a tx completer writes for phase k; never 0.
uint64_t slot_value(int round, long k, int thread) {
  return mix(g_seed ^ mix(uint64_t(round) << 40 ^ uint64_t(k) << 8 ^ uint64_t(thread))) | 1;
}
uint64_t payload_value(int round, long k, int transfer) {
  return mix(~g_seed ^ mix(uint64_t(round) << 40 ^ uint64_t(k) << 8 ^ uint64_t(transfer))) | 1;
}

// ---------------------------------------------------------------------------------------
// The plan

enum OpKind : uint8_t { OP_ARRIVE, OP_ARRIVE_TX, OP_DROP, OP_EXPECT, OP_COMPLETE, OP_PROBE };

struct Op {
  OpKind kind;
  int8_t transfer = -1;     // tx ops: index of the transfer in the phase (-1: a 0-byte op)
  bool post_late = false;   // after this op, tell the thread serving the late transfer
  bool first_part = false;  // OP_COMPLETE: write the payload before this part
  int32_t n = 0;            // arrival units
  int32_t tx = 0;           // tx bytes
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
};

struct PhasePlan {
  std::vector<ThreadPhase> th;
  std::vector<Transfer> tr;
  int late = -1;  // index of the late transfer in tr
  bool linger = false;  // the completion function yields a few times after announcing
  uint64_t units = 0, tx = 0;
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
      const uint64_t want = payload_value(id, k, int(t));
      if (payload[k & 1][t] != want)
        fail(id, "%s of phase %ld: payload of transfer %zu (thread %d -> %d%s) written before complete_tx is not visible",
             who, k, t, ph.tr[t].expecter, ph.tr[t].completer,
             ph.tr[t].late ? ", late" : ph.tr[t].late_expect ? ", late expect" : "");
    }
  }

  void on_complete() {
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

void add_complete(Rng& rng, std::vector<Op>& ops, int t, int bytes) {
  const bool split = rng.chance(1, 3);
  const int first = split ? 1 + int(rng.below(uint32_t(bytes - 1))) : bytes;
  Op op{OP_COMPLETE};
  op.transfer = int8_t(t);
  op.tx = first;
  op.first_part = true;
  // Often first thing in the phase, to race ahead of the expect (tx-count below 0).
  const size_t pos = rng.chance(1, 2) ? 0 : rng.below(uint32_t(ops.size()));
  ops.insert(ops.begin() + long(pos), op);
  if (split) {
    op.tx = bytes - first;
    op.first_part = false;
    ops.insert(ops.begin() + long(rng.below(uint32_t(ops.size()))), op);
  }
}

// Operations a thread is sure to execute (probes may be skipped, polls are counted apart).
uint64_t count_ops(const ThreadPhase& tp) {
  uint64_t n = 0;
  for (const Op& op : tp.ops) n += op.kind != OP_PROBE;
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
        add_expect(rng, ph.th[size_t(e)].ops, t, bytes, false);
        add_complete(rng, ph.th[size_t(c)].ops, t, bytes);
        ph.tr.push_back(Transfer{e, c, bytes, false, false});
        ph.tx += uint64_t(bytes);
      }
      if (rng.chance(1, 2)) {
        // The late transfer: its second half comes from any thread of the round, possibly
        // after that thread's own last arrival, possibly from one that has dropped out. At
        // most one per phase, so that once all arrivals are in the tx-count is nonzero
        // (+bytes or -bytes) until it lands.
        const int t = int(ph.tr.size());
        const int bytes = 16 * (1 + int(rng.below(256)));
        if (rng.chance(1, 2)) {
          // expect (or arrive_tx) by a participant, then complete_tx by the server.
          const int e = parts[rng.below(uint32_t(parts.size()))];
          const int c = int(rng.below(uint32_t(threads)));
          add_expect(rng, ph.th[size_t(e)].ops, t, bytes, true);
          ph.th[size_t(c)].late_service = true;
          ph.tr.push_back(Transfer{e, c, bytes, true, false});
        } else {
          // complete_tx by a participant, then expect_tx by the server (tx-count below 0
          // until then; the expect alone may complete the phase).
          const int c = parts[rng.below(uint32_t(parts.size()))];
          const int e = int(rng.below(uint32_t(threads)));
          std::vector<Op>& ops = ph.th[size_t(c)].ops;
          Op op{OP_COMPLETE};
          op.transfer = int8_t(t);
          op.tx = bytes;
          op.first_part = true;
          op.post_late = true;
          ops.insert(ops.begin() + long(rng.below(uint32_t(ops.size()))), op);
          ph.th[size_t(e)].late_service = true;
          ph.tr.push_back(Transfer{e, c, bytes, false, true});
        }
        ph.late = t;
        ph.tx += uint64_t(bytes);
      }
      if (rng.chance(1, 8)) {  // 0-byte tx ops behave as a plain arrive / nothing
        const int x = parts[rng.below(uint32_t(parts.size()))];
        std::vector<Op>& ops = ph.th[size_t(x)].ops;
        Op op{OP_EXPECT};
        op.tx = 0;
        if (rng.chance(1, 2)) {
          ops.insert(ops.begin() + long(rng.below(uint32_t(ops.size()))), op);
        } else {
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
      if (rng.chance(1, 4)) tp.ops.insert(tp.ops.begin() + long(rng.below(uint32_t(tp.ops.size()))), Op{OP_PROBE});
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
        while (first < next.ops.size() && next.ops[first].kind == OP_PROBE) ++first;
        const OpKind kind = next.ops[first].kind;
        const bool last = first + 1 == next.ops.size();
        if (last && (kind == OP_ARRIVE || kind == OP_DROP) && !next.late_service) tp.wait = W_TRY_WAIT;
      }
    }
  }
  return r;
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

  void add(const Stats& o) {
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
    xb::device::barrier_expect_tx(b, tr.bytes);
    ++st.expect_tx;
    ++st.late_expect;
  } else {
    r.payload[k & 1][ph.late] = payload_value(r.id, k, ph.late);
    r.tx_completed.fetch_add(uint64_t(tr.bytes), std::memory_order_relaxed);
    set_op(S_COMPLETE);
    xb::detail::complete_tx(b, tr.bytes);
    ++st.complete_tx;
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
          tok = xb::device::barrier_arrive_tx(b, op.n, op.tx);
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
          xb::device::barrier_expect_tx(b, op.tx);
          if (op.post_late) r.late_post.store(k, std::memory_order_release);
          ++st.expect_tx;
          if (op.tx == 0) ++st.zero_tx;
          break;
        case OP_COMPLETE:
          if (op.first_part) r.payload[k & 1][op.transfer] = payload_value(r.id, k, op.transfer);
          r.tx_completed.fetch_add(uint64_t(op.tx), std::memory_order_relaxed);
          set_op(S_COMPLETE);
          xb::detail::complete_tx(b, op.tx);
          if (op.post_late) r.late_post.store(k, std::memory_order_release);
          // The expecter marks before its expect: no mark yet means the complete came first
          // and the phase's tx-count went below zero.
          if (op.first_part && r.expect_mark[op.transfer].load(std::memory_order_seq_cst) != k) ++st.complete_first;
          ++st.complete_tx;
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
        case W_TRY_WAIT_FOR:
          for (;;) {
            bool ok;
            if (tp_ == 0) ok = b.try_wait_for(xb::arrival_token(tok), std::chrono::nanoseconds(0));
            else if (tp_ == 1) ok = b.try_wait_for(xb::arrival_token(tok), std::chrono::microseconds(2));
            else if (tp_ == 2) ok = b.try_wait_for(xb::arrival_token(tok), std::chrono::microseconds(100));
            else ok = b.try_wait_for(xb::arrival_token(tok), std::chrono::milliseconds(5));
            if (ok) break;
            poll(st);
          }
          break;
        case W_TRY_WAIT_PARITY:
          while (!b.try_wait_parity(par)) poll(st);
          break;
        case W_TRY_WAIT_PARITY_FOR:
          while (!b.try_wait_parity_for(par, xb::nanoseconds(tp_ < 2 ? 0 : 20000))) poll(st);
          break;
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

template <class B, bool HasCompletion>
void run_round(B& b, Round& r, Stats& total) {
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

}  // namespace

int main(int argc, char** argv) {
  g_seed = argc > 1 ? strtoull(argv[1], nullptr, 0) : 0x5eedba77ull;
  const uint64_t min_ops = argc > 2 ? strtoull(argv[2], nullptr, 0) : 1000000ull;
  const int threads = argc > 3 ? atoi(argv[3]) : 4;
  const char* fe = getenv("PROTOCOL_STRESS_FULL_EARLY");
  const bool full_early = !(fe && *fe == '0');  // on by default since the fix; =0 restricts
  if (threads < 1 || threads > kMaxThreads) {
    fprintf(stderr, "protocol_stress: threads must be 1..%d\n", kMaxThreads);
    return 2;
  }
  printf("protocol_stress: seed=%llu min_ops=%llu threads=%d checked=%d full_early=%d\n",
         (unsigned long long)g_seed, (unsigned long long)min_ops, threads, int(XB_CHECKED), int(full_early));
  fflush(stdout);

  Rng rng(g_seed);
  Stats total;
  uint64_t phases = 0, planned = 0;
  int rounds = 0;
  int kind_rounds[K_COUNT] = {};
  const uint64_t t0 = now_ns();
  while (total.ops < min_ops) {
    const uint32_t x = rng.below(10);
    const RoundKind kind = x < 5 ? K_BLOCK_COMPLETION : x < 7 ? K_BLOCK_EMPTY : x < 9 ? K_DEVICE_COMPLETION : K_SYSTEM_EMPTY;
    auto r = plan_round(rng, ++rounds, threads, kind, full_early);
    switch (kind) {
      case K_BLOCK_COMPLETION: run_round<decltype(g_block_completion), true>(g_block_completion, *r, total); break;
      case K_BLOCK_EMPTY: run_round<decltype(g_block_empty), false>(g_block_empty, *r, total); break;
      case K_DEVICE_COMPLETION: run_round<decltype(g_device_completion), true>(g_device_completion, *r, total); break;
      default: run_round<decltype(g_system_empty), false>(g_system_empty, *r, total); break;
    }
    phases += r->phases.size();
    planned += r->planned_ops;
    ++kind_rounds[kind];
  }
  const double secs = double(now_ns() - t0) / 1e9;
  if (total.ops < planned) {
    fprintf(stderr, "protocol_stress: FAIL executed %llu ops, planned %llu\n", (unsigned long long)total.ops,
            (unsigned long long)planned);
    return 1;
  }

  printf("rounds: %d (", rounds);
  for (int k = 0; k < K_COUNT; ++k) printf("%s%s %d", k ? ", " : "", kKindNames[k], kind_rounds[k]);
  printf(")\n");
  printf("arrivals: arrive(1) %llu, arrive(n>1) %llu, arrive_and_drop %llu, barrier_arrive_tx %llu\n",
         (unsigned long long)total.arrive1, (unsigned long long)total.arrive_n, (unsigned long long)total.drops,
         (unsigned long long)total.arrive_tx);
  printf("tx: barrier_expect_tx %llu, complete_tx %llu, before the expect %llu, 0-byte %llu; late complete %llu, "
         "late expect %llu, of those by a dropped-out thread %llu\n",
         (unsigned long long)total.expect_tx, (unsigned long long)total.complete_tx,
         (unsigned long long)total.complete_first, (unsigned long long)total.zero_tx, (unsigned long long)total.late,
         (unsigned long long)total.late_expect, (unsigned long long)total.late_by_dropped);
  printf("completion steps run by:");
  for (int i = 0; i < S_COUNT; ++i)
    printf("%s %s %llu", i ? "," : "", kStepNames[i], (unsigned long long)total.completed_by[i]);
  printf("; two phases in one call %llu\n", (unsigned long long)total.back_to_back);
  printf("waits:");
  for (int w = 0; w < W_COUNT; ++w) printf("%s %s %llu", w ? "," : "", kWaitNames[w], (unsigned long long)total.waits[w]);
  printf("\nearly arrivals while the completion step ran: %llu (phase not yet published: %llu); "
         "probes %llu; polls %llu\n",
         (unsigned long long)total.early, (unsigned long long)total.early_unpublished, (unsigned long long)total.probes,
         (unsigned long long)total.polls);
  printf("protocol_stress: OK ops=%llu phases=%llu rounds=%d threads=%d seed=%llu time=%.2fs\n",
         (unsigned long long)total.ops, (unsigned long long)phases, rounds, threads, (unsigned long long)g_seed, secs);
  return 0;
}
