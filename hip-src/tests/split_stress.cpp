// split_stress.cpp - a randomized stress test of the split form of
// xb::barrier<xb::thread_scope_system> (engine_system.hpp) on host threads, meant to run
// under ThreadSanitizer (tests/protocol_tsan.rs builds and runs it, checked and unchecked).
//
//   split_stress [seed [min_ops [round]]]
//
// Each round makes a fresh, zero-filled pair of barrier objects and publish slots (each on
// a cache line of its own) and cross-links them as xb_system_split_init does
// (hip-src/host/system_barrier.cpp): init() on both, then system_split::init_side on each
// with its own slot and the other's. Side A drives one object, side B the other, each with
// 1 to 4 plain std::threads (no fibers, no backend runtime: the platform layer waits by
// spinning, then sched_yield), every thread counting one arrival per phase, and only the
// xb::barrier member functions touch the barriers after the set-up. Every round plans its
// whole schedule first, from a generator seeded by (seed, round number) alone: the threads
// per side, the phases, who leaves when, how each thread waits in each phase, which phases
// have a late arrival, which probes run. Only the interleaving is left to the OS. Rounds
// repeat until the planned operations (arrivals and waits) reach min_ops (default 2 * 10^5),
// so a seed and min_ops fix every round. A failure prints the command line that replays the
// run, and the one that replays just the failing round (the third argument: only that round).
//
// What is covered, per phase k of a round:
//   - every way to wait, chosen per thread and phase: arrive_and_wait; arrive then
//     wait(token); arrive then a try_wait loop; arrive then a try_wait_for loop with timeouts
//     of 0 to 200 us (some expire, some succeed), given as xb::nanoseconds or std::chrono;
//     arrive then wait_parity, a try_wait_parity loop or a try_wait_parity_for loop on the
//     token's parity;
//   - arrive_and_drop: in some rounds single threads leave at random phases (possibly every
//     thread of both sides, which ends the round), in others every thread of one side leaves
//     (within a few phases of each other, from phase 0 on) and the other side goes on alone
//     for at least four more phases, which engine_system.hpp point 4 completes at once on the
//     side that left;
//   - a late arrival: one designated thread (a random side and thread per round) sleeps
//     2-20 us before its arrival (or its arrive_and_drop) in about a quarter of its phases,
//     and sets an atomic flag to k just before arriving; the other threads of both sides,
//     having arrived, probe phase k meanwhile with try_wait, try_wait_parity or a 1-5 us
//     try_wait_for;
//   - probes before a thread's own arrival: try_wait_parity, or try_wait_parity_for with a
//     1-5 us timeout, on phase k's parity.
//
// What is checked (any violation prints "split_stress: FAIL ..." and the replay command
// lines, and exits 1):
//   - happens-before across the sides: every thread writes a plain per-thread slot before it
//     arrives in phase k (or arrives and drops), and every waiter of phase k reads the slot of
//     every thread of BOTH sides that arrived in phase k, which must hold k's value. The slots
//     alternate by phase parity (a thread writes its slot of phase k + 2 only after every
//     waiter of k has arrived in k + 1), so the value must be k's exactly: an older one means
//     the wait returned before that thread arrived (an early completion), and TSAN reports
//     a read that the barrier does not order after the write;
//   - no early completion: a probe before the prober's own arrival must find phase k
//     incomplete (a try_wait_parity_for must expire, after its whole timeout); a probe of a
//     late phase that finds it complete must also find the late thread's flag set (the
//     barrier's acquire orders it), and a probe that finds it incomplete while the flag is
//     not yet set is counted ("late probes that found the phase open"); after the wait of a
//     late phase the flag must be set;
//   - tokens: every arrive()'s token has parity k & 1, and (the split form's encoding,
//     engine_system.hpp point 2) carries phase number k;
//   - a false try_wait_for / try_wait_parity_for has waited for at least its timeout;
//   - set-up: a fresh pair reports try_wait_parity(1) complete and try_wait_parity(0) not;
//   - after the round: each side's completed-phase count (the object's second word and the
//     slot it publishes to) is the number of phases the round ran, or for a side whose threads
//     all left, the number of phases up to its last drop with `left` set (engine_system.hpp
//     4.); on both objects try_wait_parity finds the round's last phase complete and the one
//     after it not, also where both sides have left (the barrier stays at the last phase's
//     successor, as the shared form does).
// The protocol's own checked mode (XB_CHECKED=1) adds over-arrival, stale-token and deadlock
// (wait timeout) faults, which abort the process (after printing the replay lines). A hang in
// an unbounded wait (unchecked builds) is caught by a watchdog, which fails the round.
//
// Not reached: an arrival that lands in a share while its completion step runs, before the
// step has stored the count. Every thread here waits for phase k before it arrives in k + 1,
// and no wait returns before the step's store, so the arrivals that find a share's phase
// claimed (protocol.hpp 3.; they do occur) all land after it. A drop landing earlier is why
// the step's read of the share's word must acquire (engine_system.hpp 4.); the model checks
// (tools/genmc-check.sh) cover that order, and a relaxed read passes here.
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
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <xbarrier/barrier.hpp>

#include "stress_harness.hpp"

namespace {

using Bar = xb::barrier<xb::thread_scope_system>;
using split = xb::detail::system_split;
using access = xb::detail::barrier_access;

constexpr int kMaxSide = 4;  // threads per side
const char kSideName[2] = {'A', 'B'};
constexpr uint64_t kHangNs = 30000000000ull;       // our own polls give up after 30 s
constexpr uint64_t kRoundHangNs = 60000000000ull;  // a round (milliseconds, normally) after 60 s

uint64_t g_min_ops = 0;
const char* g_argv0 = "split_stress";

void format_replay(int round) {
  set_replay("split_stress: replay the run: %s %llu %llu\n"
             "split_stress: replay round %d alone: %s %llu 0 %d\n"
             "split_stress: (the binary was built with -DXB_CHECKED=%d; tests/protocol_tsan.rs "
             "prints the compile command)\n",
             g_argv0, (unsigned long long)g_seed, (unsigned long long)g_min_ops, round, g_argv0,
             (unsigned long long)g_seed, round, int(XB_CHECKED));
}

// A ThreadSanitizer report ends the process (halt_on_error=1) without an abort: the runtime
// calls this hook after printing it (a weak function of libtsan's; without TSAN, nobody does).
extern "C" void __tsan_on_report(const void*) { on_abort(0); }

// What thread t of side s writes before its arrival in phase k; never 0.
uint64_t slot_value(int round, long k, int s, int t) {
  return mix(g_seed ^ mix(uint64_t(round) << 40 ^ uint64_t(k) << 8 ^ uint64_t(s) << 4 ^ uint64_t(t))) | 1;
}

// ---------------------------------------------------------------------------------------
// The plan

enum WaitMode : uint8_t {
  W_ARRIVE_AND_WAIT,
  W_WAIT,
  W_TRY_WAIT,
  W_TRY_WAIT_FOR,
  W_WAIT_PARITY,
  W_TRY_WAIT_PARITY,
  W_TRY_WAIT_PARITY_FOR,
  W_COUNT
};
const char* const kWaitNames[W_COUNT] = {"arrive_and_wait", "wait",           "try_wait",           "try_wait_for",
                                         "wait_parity",     "try_wait_parity", "try_wait_parity_for"};

enum OwnProbe : uint8_t { OWN_NONE, OWN_TRY_WAIT_PARITY, OWN_TRY_WAIT_PARITY_FOR };
enum LateProbe : uint8_t { LATE_NONE, LATE_TRY_WAIT, LATE_TRY_WAIT_PARITY, LATE_TRY_WAIT_FOR };
const char* const kLateProbeNames[4] = {"", "try_wait", "try_wait_parity", "try_wait_for"};

// What one thread does in one phase (its arrival is arrive_and_drop at its drop phase).
struct Step {
  WaitMode wait = W_WAIT;
  uint8_t timeout_pick = 0;  // index into the try_*_for timeouts
  OwnProbe own = OWN_NONE;   // before its arrival
  LateProbe late = LATE_NONE;  // after its arrival, in a phase with a late thread
  uint8_t probe_us = 1;      // the timed probes' timeout
};

enum DropMode { D_NONE, D_SOME, D_SIDE_LEAVES, D_COUNT };
const char* const kDropNames[D_COUNT] = {"no drops", "single threads leave", "one side leaves"};

// The objects of one round: fresh and zero-filled (value-initialized), each on its own line.
struct alignas(64) BarLine {
  Bar b;
};
struct alignas(64) SlotLine {
  uint64_t c;
};
struct Objects {
  BarLine bar[2];   // side A's object, side B's
  SlotLine pub[2];  // where side A publishes its count, side B
};

struct Round {
  int id = 0;
  int n[2] = {0, 0};
  long phases = 0;
  long drop_at[2][kMaxSide] = {};  // phase of the thread's arrive_and_drop; `phases`: it stays
  DropMode drop_mode = D_NONE;
  int late_side = 0, late_thread = 0;
  std::vector<uint8_t> late_us;  // per phase: the late thread's delay in us (0: not late)
  std::vector<Step> steps;       // [phase][side][thread]
  uint64_t planned_ops = 0;

  // Plain data: TSAN reports any access to these that the barrier does not order.
  uint64_t slot[2][2][kMaxSide] = {};  // [phase & 1][side][thread]

  std::atomic<long> late_flag{-1};  // the last phase whose late thread is about to arrive
  std::atomic<bool> go{false};

  bool participates(int s, int t, long k) const { return t < n[s] && k <= drop_at[s][t]; }
  bool side_left(int s) const { return last_drop(s) >= 0; }
  // The phase of the side's last arrive_and_drop where every thread of it leaves; else -1.
  long last_drop(int s) const {
    long last = -1;
    for (int t = 0; t < n[s]; ++t) {
      if (drop_at[s][t] >= phases) return -1;
      last = std::max(last, drop_at[s][t]);
    }
    return last;
  }
  const Step& step(long k, int s, int t) const { return steps[size_t((k * 2 + s) * kMaxSide + t)]; }
  Step& step(long k, int s, int t) { return steps[size_t((k * 2 + s) * kMaxSide + t)]; }
  bool is_late(long k, int s, int t) const { return s == late_side && t == late_thread && late_us[size_t(k)]; }
};

std::unique_ptr<Round> plan_round(Rng& rng, int id) {
  auto r = std::make_unique<Round>();
  r->id = id;
  r->n[0] = 1 + int(rng.below(kMaxSide));
  r->n[1] = 1 + int(rng.below(kMaxSide));
  long P = 8 + long(rng.below(120));
  const uint32_t x = rng.below(10);
  r->drop_mode = x < 4 ? D_NONE : x < 7 ? D_SOME : D_SIDE_LEAVES;
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < kMaxSide; ++t) r->drop_at[s][t] = P;
  if (r->drop_mode == D_SOME) {
    for (int s = 0; s < 2; ++s)
      for (int t = 0; t < r->n[s]; ++t)
        if (rng.chance(1, 3)) r->drop_at[s][t] = long(rng.below(uint32_t(P)));
  } else if (r->drop_mode == D_SIDE_LEAVES) {
    // Side `s` leaves at phase d at the latest (its threads within four phases of each
    // other); the other side goes on alone for at least four phases.
    const int s = int(rng.below(2));
    const long d = long(rng.below(uint32_t(P - 4)));
    for (int t = 0; t < r->n[s]; ++t) r->drop_at[s][t] = d - long(rng.below(uint32_t(std::min(d, 3L) + 1)));
    r->drop_at[s][rng.below(uint32_t(r->n[s]))] = d;
    // Half the time threads of the other side leave too, but one of them stays.
    if (rng.chance(1, 2)) {
      const int o = 1 - s;
      const int stays = int(rng.below(uint32_t(r->n[o])));
      for (int t = 0; t < r->n[o]; ++t)
        if (t != stays && rng.chance(1, 2)) r->drop_at[o][t] = long(rng.below(uint32_t(P)));
    }
  }
  // Once every thread of both sides has left, no phase follows.
  long last = -1;
  bool stays = false;
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < r->n[s]; ++t) {
      if (r->drop_at[s][t] >= P) stays = true;
      else last = std::max(last, r->drop_at[s][t]);
    }
  if (!stays) P = last + 1;
  r->phases = P;

  r->late_side = int(rng.below(2));
  r->late_thread = int(rng.below(uint32_t(r->n[r->late_side])));
  r->late_us.assign(size_t(P), 0);
  const uint8_t delays_us[4] = {2, 5, 10, 20};
  for (long k = 0; k < P; ++k)
    if (r->participates(r->late_side, r->late_thread, k) && rng.chance(1, 4)) r->late_us[size_t(k)] = delays_us[rng.below(4)];

  r->steps.assign(size_t(P * 2 * kMaxSide), Step{});
  for (long k = 0; k < P; ++k)
    for (int s = 0; s < 2; ++s)
      for (int t = 0; t < r->n[s]; ++t) {
        if (!r->participates(s, t, k)) continue;
        Step& sp = r->step(k, s, t);
        const bool drop = k == r->drop_at[s][t];
        sp.timeout_pick = uint8_t(rng.below(4));
        sp.probe_us = uint8_t(1 + rng.below(5));
        if (rng.chance(1, 8)) sp.own = rng.chance(1, 2) ? OWN_TRY_WAIT_PARITY : OWN_TRY_WAIT_PARITY_FOR;
        // A probe of the late thread's phase needs a token: no arrive_and_wait, no drop.
        if (r->late_us[size_t(k)] && !r->is_late(k, s, t) && !drop && rng.chance(3, 4))
          sp.late = LateProbe(1 + rng.below(3));
        sp.wait = WaitMode(sp.late != LATE_NONE ? 1 + rng.below(W_COUNT - 1) : rng.below(W_COUNT));
        // The arrival, and the wait where the thread stays for the next phase.
        r->planned_ops += 1 + uint64_t(!drop && sp.wait != W_ARRIVE_AND_WAIT);
      }
  return r;
}

// ---------------------------------------------------------------------------------------
// Running a round

struct Stats {
  uint64_t ops = 0, polls = 0, arrivals = 0, drops = 0;
  uint64_t waits[W_COUNT] = {};
  uint64_t own_probes = 0, own_probes_for = 0;
  uint64_t late_arrivals = 0, late_probes[4] = {}, late_open = 0, late_complete = 0;
  uint64_t wait_for_true = 0, wait_for_expired = 0;
  uint64_t slot_checks = 0, cross_checks = 0;

  void add(const Stats& o) {
    ops += o.ops;
    polls += o.polls;
    arrivals += o.arrivals;
    drops += o.drops;
    for (int i = 0; i < W_COUNT; ++i) waits[i] += o.waits[i];
    own_probes += o.own_probes;
    own_probes_for += o.own_probes_for;
    late_arrivals += o.late_arrivals;
    for (int i = 0; i < 4; ++i) late_probes[i] += o.late_probes[i];
    late_open += o.late_open;
    late_complete += o.late_complete;
    wait_for_true += o.wait_for_true;
    wait_for_expired += o.wait_for_expired;
    slot_checks += o.slot_checks;
    cross_checks += o.cross_checks;
  }
};

// Back-off for our own polling loops, with a hang detector.
struct Poller {
  int round;
  const char* what;
  long k;
  int side, thread;
  uint32_t iteration = 0;
  uint64_t start = 0;
  void operator()(Stats& st) {
    ++st.polls;
    ++iteration;
    if (iteration < 8) return;
    if ((iteration & 255) == 0) {
      if (!start) start = now_ns();
      else if (now_ns() - start > kHangNs)
        fail(round, "side %c thread %d: %s for phase %ld did not finish within 30 s (hang)", kSideName[side], thread,
             what, k);
    }
    sched_yield();
  }
};

// try_wait_for(token) or (tok null) try_wait_parity_for with `timeout_ns`; a false result
// must come after the whole timeout.
bool wait_for(const Bar& b, const Round& r, long k, int s, int t, const xb::arrival_token* tok, bool par,
              int64_t timeout_ns, Stats& st) {
  const uint64_t start = now_ns();
  bool ok;
  if (tok && timeout_ns % 1000 == 0) ok = b.try_wait_for(xb::arrival_token(*tok), std::chrono::microseconds(timeout_ns / 1000));
  else if (tok) ok = b.try_wait_for(xb::arrival_token(*tok), xb::nanoseconds(timeout_ns));
  else ok = b.try_wait_parity_for(par, xb::nanoseconds(timeout_ns));
  const uint64_t spent = now_ns() - start;
  if (!ok && spent < uint64_t(timeout_ns))
    fail(r.id, "side %c thread %d: %s for phase %ld returned false after %llu ns, before its timeout of %lld ns",
         kSideName[s], t, tok ? "try_wait_for" : "try_wait_parity_for", k, (unsigned long long)spent,
         (long long)timeout_ns);
  ++(ok ? st.wait_for_true : st.wait_for_expired);
  return ok;
}

// After a wait for phase k: every thread of both sides that arrived in phase k wrote its
// slot before; the late thread's flag is set.
void check_after_wait(Round& r, long k, int s, int t, const char* how, Stats& st) {
  for (int s2 = 0; s2 < 2; ++s2)
    for (int t2 = 0; t2 < r.n[s2]; ++t2) {
      if (!r.participates(s2, t2, k)) continue;
      const uint64_t want = slot_value(r.id, k, s2, t2);
      const uint64_t got = r.slot[k & 1][s2][t2];
      if (got != want)
        fail(r.id,
             "side %c thread %d, after its %s for phase %ld: side %c thread %d's write before its arrival%s in phase "
             "%ld is not visible (%llx, want %llx): the phase completed before that arrival",
             kSideName[s], t, how, k, kSideName[s2], t2, k == r.drop_at[s2][t2] ? " (arrive_and_drop)" : "", k,
             (unsigned long long)got, (unsigned long long)want);
      ++st.slot_checks;
      if (s2 != s) ++st.cross_checks;
    }
  if (r.late_us[size_t(k)] && r.late_flag.load(std::memory_order_acquire) < k)
    fail(r.id, "side %c thread %d: %s for phase %ld returned before the late thread (side %c thread %d) arrived",
         kSideName[s], t, how, k, kSideName[r.late_side], r.late_thread);
}

void worker(Objects& o, Round& r, int s, int t, Stats& st) {
  Bar& b = o.bar[s].b;
  while (!r.go.load(std::memory_order_acquire)) sched_yield();
  for (long k = 0; k < r.phases && r.participates(s, t, k); ++k) {
    const Step& sp = r.step(k, s, t);
    const bool par = k & 1;
    const bool drop = k == r.drop_at[s][t];
    const bool late = r.is_late(k, s, t);

    // Our arrival is still to come: phase k cannot be complete.
    if (sp.own == OWN_TRY_WAIT_PARITY) {
      ++st.own_probes;
      if (b.try_wait_parity(par))
        fail(r.id, "phase %ld: try_wait_parity(%d) reported it complete before side %c thread %d arrived", k, int(par),
             kSideName[s], t);
    } else if (sp.own == OWN_TRY_WAIT_PARITY_FOR) {
      ++st.own_probes_for;
      if (wait_for(b, r, k, s, t, nullptr, par, int64_t(sp.probe_us) * 1000, st))
        fail(r.id, "phase %ld: try_wait_parity_for(%d, %d us) reported it complete before side %c thread %d arrived", k,
             int(par), int(sp.probe_us), kSideName[s], t);
    }

    r.slot[k & 1][s][t] = slot_value(r.id, k, s, t);
    if (late) {
      std::this_thread::sleep_for(std::chrono::microseconds(r.late_us[size_t(k)]));
      r.late_flag.store(k, std::memory_order_release);
      ++st.late_arrivals;
    }
    ++st.ops;
    if (drop) {
      b.arrive_and_drop();
      ++st.drops;
      break;
    }
    ++st.arrivals;
    if (sp.wait == W_ARRIVE_AND_WAIT) {
      b.arrive_and_wait();
      ++st.waits[W_ARRIVE_AND_WAIT];
      check_after_wait(r, k, s, t, kWaitNames[W_ARRIVE_AND_WAIT], st);
      continue;
    }
    xb::arrival_token tok = b.arrive();
    if (tok.parity() != par)
      fail(r.id, "side %c thread %d: arrive() in phase %ld returned a token of parity %d, want %d", kSideName[s], t, k,
           int(tok.parity()), int(par));
    if (split::phase_of(tok.state()) != uint64_t(k))
      fail(r.id, "side %c thread %d: arrive() in phase %ld returned a token of phase %llu", kSideName[s], t, k,
           (unsigned long long)split::phase_of(tok.state()));

    if (sp.late != LATE_NONE) {
      // The late thread's arrival may still be to come: a probe that finds phase k complete
      // must see its flag (the barrier's acquire orders the flag's store before it).
      ++st.late_probes[sp.late];
      bool ok = false;
      switch (sp.late) {
        case LATE_TRY_WAIT: ok = b.try_wait(xb::arrival_token(tok)); break;
        case LATE_TRY_WAIT_PARITY: ok = b.try_wait_parity(par); break;
        default: ok = wait_for(b, r, k, s, t, &tok, par, int64_t(sp.probe_us) * 1000, st); break;
      }
      const long flag = r.late_flag.load(std::memory_order_acquire);
      if (ok && flag < k)
        fail(r.id,
             "phase %ld: %s by side %c thread %d reported it complete before the late thread (side %c thread %d) "
             "arrived",
             k, kLateProbeNames[sp.late], kSideName[s], t, kSideName[r.late_side], r.late_thread);
      if (!ok && flag < k) ++st.late_open;
      if (ok) ++st.late_complete;
    }

    Poller poll{r.id, kWaitNames[sp.wait], k, s, t};
    switch (sp.wait) {
      case W_WAIT:
        b.wait(std::move(tok));
        break;
      case W_TRY_WAIT:
        while (!b.try_wait(xb::arrival_token(tok))) poll(st);
        break;
      case W_TRY_WAIT_FOR: {
        const int64_t timeouts_ns[4] = {0, 1000, 20000, 200000};
        while (!wait_for(b, r, k, s, t, &tok, par, timeouts_ns[sp.timeout_pick], st)) poll(st);
        break;
      }
      case W_WAIT_PARITY:
        b.wait_parity(tok.parity());
        break;
      case W_TRY_WAIT_PARITY:
        while (!b.try_wait_parity(tok.parity())) poll(st);
        break;
      case W_TRY_WAIT_PARITY_FOR: {
        const int64_t timeouts_ns[4] = {0, 2000, 50000, 200000};
        while (!wait_for(b, r, k, s, t, nullptr, tok.parity(), timeouts_ns[sp.timeout_pick], st)) poll(st);
        break;
      }
      default:
        fail(r.id, "internal: bad wait mode %d", int(sp.wait));
    }
    ++st.waits[sp.wait];
    ++st.ops;
    check_after_wait(r, k, s, t, kWaitNames[sp.wait], st);
  }
}

void run_round(Round& r, Stats& total) {
  std::unique_ptr<Objects> o(new Objects());  // value-initialized: zero-filled
  Bar* bars[2] = {&o->bar[0].b, &o->bar[1].b};
  // The set-up of xb_system_split_init (hip-src/host/system_barrier.cpp).
  init(bars[0], ptrdiff_t(r.n[0]));
  init(bars[1], ptrdiff_t(r.n[1]));
  split::init_side(access::word(*bars[0]), ptrdiff_t(r.n[0]), &o->pub[0].c, &o->pub[1].c);
  split::init_side(access::word(*bars[1]), ptrdiff_t(r.n[1]), &o->pub[1].c, &o->pub[0].c);
  // A fresh barrier: parity 1 counts as complete, parity 0 (phase 0) does not.
  for (int s = 0; s < 2; ++s)
    if (!bars[s]->try_wait_parity(true) || bars[s]->try_wait_parity(false))
      fail(r.id, "fresh pair, side %c: try_wait_parity(1)=%d try_wait_parity(0)=%d, want 1 and 0", kSideName[s],
           int(bars[s]->try_wait_parity(true)), int(bars[s]->try_wait_parity(false)));

  Stats stats[2][kMaxSide];
  std::vector<std::thread> ts;
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < r.n[s]; ++t)
      ts.emplace_back([&o, &r, s, t, &stats] { worker(*o, r, s, t, stats[s][t]); });
  r.go.store(true, std::memory_order_release);
  for (auto& th : ts) th.join();
  Stats round;
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < r.n[s]; ++t) round.add(stats[s][t]);
  if (round.ops != r.planned_ops)
    fail(r.id, "round end: executed %llu arrivals and waits, planned %llu", (unsigned long long)round.ops,
         (unsigned long long)r.planned_ops);
  total.add(round);

  // Each side's count: the phases its share completed, with `left` set where all its
  // threads left (engine_system.hpp 4.).
  const long P = r.phases;
  for (int s = 0; s < 2; ++s) {
    const uint64_t want = r.side_left(s) ? uint64_t(r.last_drop(s) + 1) | split::left : uint64_t(P);
    const uint64_t count = __atomic_load_n(&access::word(*bars[s])[1], __ATOMIC_ACQUIRE);
    const uint64_t published = __atomic_load_n(&o->pub[s].c, __ATOMIC_ACQUIRE);
    if (count != want || published != want)
      fail(r.id, "round end, side %c: completed-phase count %#llx, published %#llx; want %#llx (%ld phases%s)",
           kSideName[s], (unsigned long long)count, (unsigned long long)published, (unsigned long long)want, P,
           r.side_left(s) ? ", every thread left" : "");
  }
  // Phase P-1 is complete and phase P is not, on both objects; also where both sides have
  // left ("the last phase's successor, where the barrier stays": engine_system.hpp, current()).
  for (int s = 0; s < 2; ++s)
    if (!bars[s]->try_wait_parity(bool((P - 1) & 1)) || bars[s]->try_wait_parity(bool(P & 1)))
      fail(r.id,
           "round end, side %c: try_wait_parity(%d)=%d, try_wait_parity(%d)=%d after %ld phases, want 1 and 0 "
           "(the phase of each side's last drop, -1 where threads stayed: A %ld, B %ld)",
           kSideName[s], int((P - 1) & 1), int(bars[s]->try_wait_parity(bool((P - 1) & 1))), int(P & 1),
           int(bars[s]->try_wait_parity(bool(P & 1))), P, r.last_drop(0), r.last_drop(1));
}


// A side runs ahead (engine_system.hpp 5.): side A (one participant) arrives for phases 0
// and 1 before side B (one participant) has arrived at all. Its tokens name phases 0 and 1;
// neither completes early; a wait on the older one is not stale (checked builds: no fault),
// since the barrier is still in phase 0; the waits on a parity name the barrier's (the
// slower side's) phase; once B arrives twice, both tokens complete. Deterministic; plain
// host threads, run once before the rounds.
void run_ahead_check() {
  auto o = std::make_unique<Objects>();
  Bar& a = o->bar[0].b;
  Bar& b = o->bar[1].b;
  init(&a, 1);
  init(&b, 1);
  split::init_side(access::word(a), 1, &o->pub[0].c, &o->pub[1].c);
  split::init_side(access::word(b), 1, &o->pub[1].c, &o->pub[0].c);
  xb::arrival_token t0 = a.arrive();
  xb::arrival_token t1 = a.arrive();  // A's share of phase 0 is in: this one counts in phase 1
  if (split::phase_of(t0.state()) != 0 || split::phase_of(t1.state()) != 1 || t0.parity() || !t1.parity())
    fail(0, "run ahead: tokens name phases %llu and %llu, want 0 and 1",
         (unsigned long long)split::phase_of(t0.state()), (unsigned long long)split::phase_of(t1.state()));
  if (a.try_wait(xb::arrival_token(t0)) || a.try_wait(xb::arrival_token(t1)) ||
      a.try_wait_for(xb::arrival_token(t0), xb::nanoseconds(1000)))
    fail(0, "run ahead: a phase completed before side B arrived");
  // The barrier is in phase 0 (B has not arrived): phase 0's parity is not complete, the
  // previous phase of parity 1 counts as complete, on both sides.
  for (Bar* side : {&a, &b})
    if (side->try_wait_parity(false) || !side->try_wait_parity(true))
      fail(0, "run ahead: the waits on a parity do not name the slower side's phase 0");
  // B's second arrival waits until A has waited on t0: with phase 1 complete as well, t0
  // would be two phases old, which cuda::barrier leaves undefined (a checked fault).
  std::atomic<bool> waited_t0{false};
  std::thread other([&b, &waited_t0] {
    b.arrive_and_wait();
    while (!waited_t0.load(std::memory_order_acquire)) std::this_thread::yield();
    b.arrive_and_wait();
  });
  a.wait(std::move(t0));
  waited_t0.store(true, std::memory_order_release);
  a.wait(std::move(t1));
  other.join();
  // Phases 0 and 1 are complete: the barrier is in phase 2, of parity 0.
  for (Bar* side : {&a, &b})
    if (side->try_wait_parity(false) || !side->try_wait_parity(true))
      fail(0, "run ahead: after two phases the waits on a parity do not name phase 2");
}

// Each round's generator depends on the seed and the round number alone, so that one round
// replays without the rounds before it.
uint64_t round_seed(int round) { return mix(g_seed ^ mix(0x73706c6974ull + uint64_t(round))); }

}  // namespace

int main(int argc, char** argv) {
  g_argv0 = argv[0];
  g_program = "split_stress";
  g_seed = argc > 1 ? strtoull(argv[1], nullptr, 0) : 0x5b11d5eedull;
  const uint64_t min_ops = argc > 2 ? strtoull(argv[2], nullptr, 0) : 200000ull;
  const int only_round = argc > 3 ? atoi(argv[3]) : 0;  // replay this round alone
  if (only_round < 0 || argc > 4) {
    fprintf(stderr, "usage: split_stress [seed [min_ops [round]]]\n");
    return 2;
  }
  g_min_ops = min_ops;
  struct sigaction sa = {};
  sa.sa_handler = on_abort;
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGABRT, &sa, nullptr);
  printf("split_stress: seed=%llu min_ops=%llu checked=%d%s\n", (unsigned long long)g_seed,
         (unsigned long long)min_ops, int(XB_CHECKED), only_round ? " (one round)" : "");
  fflush(stdout);

  set_replay("split_stress: the run-ahead check, before the rounds, failed: %s reruns it\n", g_argv0);
  run_ahead_check();
  Stats total;
  uint64_t phases = 0, planned = 0, alone_phases = 0, late_phases = 0;
  int rounds = 0;
  int mode_rounds[D_COUNT] = {};
  int threads_hist[2 * kMaxSide + 1] = {};
  const uint64_t t0 = now_ns();
  // Until the planned operations reach min_ops, so that seed and min_ops fix the rounds.
  std::thread dog(watchdog, kRoundHangNs);
  for (int id = only_round ? only_round : 1; only_round ? id == only_round : planned < min_ops; ++id) {
    format_replay(id);
    g_round_start.store(now_ns(), std::memory_order_relaxed);
    g_round.store(id, std::memory_order_relaxed);
    Rng rng(round_seed(id));
    auto r = plan_round(rng, id);
    run_round(*r, total);
    for (long k = 0; k < r->phases; ++k) {
      bool side_in[2] = {false, false};
      for (int s = 0; s < 2; ++s)
        for (int t = 0; t < r->n[s]; ++t) side_in[s] = side_in[s] || r->participates(s, t, k);
      alone_phases += side_in[0] != side_in[1];
      late_phases += r->late_us[size_t(k)] != 0;
    }
    phases += uint64_t(r->phases);
    planned += r->planned_ops;
    ++rounds;
    ++mode_rounds[r->drop_mode];
    ++threads_hist[r->n[0] + r->n[1]];
  }
  g_round.store(0, std::memory_order_relaxed);
  g_done.store(true, std::memory_order_relaxed);
  dog.join();  // a thread still running at exit costs TSAN's atexit_sleep_ms (1 s)
  const double secs = double(now_ns() - t0) / 1e9;
  if (total.ops < planned)
    fail(0, "executed %llu ops, planned %llu", (unsigned long long)total.ops, (unsigned long long)planned);

  printf("rounds: %d (", rounds);
  for (int m = 0; m < D_COUNT; ++m) printf("%s%s %d", m ? ", " : "", kDropNames[m], mode_rounds[m]);
  printf("); threads in all (A+B):");
  for (int n = 2; n <= 2 * kMaxSide; ++n) printf(" %d:%d", n, threads_hist[n]);
  printf("\nphases: %llu, of them %llu with one side alone (the other had left), %llu with a late arrival\n",
         (unsigned long long)phases, (unsigned long long)alone_phases, (unsigned long long)late_phases);
  printf("arrivals: arrive %llu, arrive_and_drop %llu\n", (unsigned long long)total.arrivals,
         (unsigned long long)total.drops);
  printf("waits:");
  for (int w = 0; w < W_COUNT; ++w) printf("%s %s %llu", w ? "," : "", kWaitNames[w], (unsigned long long)total.waits[w]);
  printf("\ntry_wait_for / try_wait_parity_for: %llu returned true, %llu expired after their whole timeout\n",
         (unsigned long long)total.wait_for_true, (unsigned long long)total.wait_for_expired);
  printf("probes before the prober's own arrival: try_wait_parity %llu, try_wait_parity_for %llu (all incomplete)\n",
         (unsigned long long)total.own_probes, (unsigned long long)total.own_probes_for);
  printf("late arrivals %llu; probes of their phases: try_wait %llu, try_wait_parity %llu, try_wait_for %llu; "
         "%llu found the phase open before the late thread arrived, %llu found it complete (after)\n",
         (unsigned long long)total.late_arrivals, (unsigned long long)total.late_probes[LATE_TRY_WAIT],
         (unsigned long long)total.late_probes[LATE_TRY_WAIT_PARITY],
         (unsigned long long)total.late_probes[LATE_TRY_WAIT_FOR], (unsigned long long)total.late_open,
         (unsigned long long)total.late_complete);
  printf("slots checked after waits: %llu (%llu of the other side's threads); polls %llu\n",
         (unsigned long long)total.slot_checks, (unsigned long long)total.cross_checks,
         (unsigned long long)total.polls);
  printf("split_stress: OK ops=%llu phases=%llu rounds=%d seed=%llu time=%.2fs\n", (unsigned long long)total.ops,
         (unsigned long long)phases, rounds, (unsigned long long)g_seed, secs);
  return 0;
}
