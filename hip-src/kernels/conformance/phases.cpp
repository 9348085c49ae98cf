// Phases, tokens, parity, arrival updates, drops and completion functions.
#include "common.hpp"

using block_barrier = xb::barrier<xb::thread_scope_block>;

// Many phases (1000 in the suite) of one barrier: every phase each thread publishes a
// value, and after the phase completes reads its neighbour's value of that same phase.
XB_KERNEL void xbc_reuse(unsigned long long* report, unsigned phases) {
  __shared__ block_barrier bar;
  __shared__ unsigned slot[1024];
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) init(&bar, n);
  __syncthreads();
  for (unsigned p = 0; p < phases; ++p) {
    slot[t] = p * 4096 + t;
    bar.arrive_and_wait();
    const unsigned other = (t + 1 + p) % n;
    xbc::expect_eq(report, p, slot[other], p * 4096 + other);
    bar.arrive_and_wait();  // nobody overwrites a slot before everyone has read it
  }
}

// Split arrive/wait: the token from arrive() is waited on after unrelated work, with wait,
// try_wait polling and wait_parity taking turns.
XB_KERNEL void xbc_split_tokens(unsigned long long* report, unsigned phases) {
  __shared__ block_barrier bar;
  __shared__ unsigned slot[1024];
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) init(&bar, n);
  __syncthreads();
  unsigned busy = 0;
  for (unsigned p = 0; p < phases; ++p) {
    slot[t] = p + 7 * t;
    auto token = bar.arrive();
    for (unsigned i = 0; i < (t % 5) * 10; ++i) busy += i;  // work between arrive and wait
    switch (p % 3) {
      case 0: bar.wait(static_cast<xb::arrival_token&&>(token)); break;
      case 1: while (!bar.try_wait(static_cast<xb::arrival_token&&>(token))) {} break;
      default: bar.wait_parity(token.parity()); break;
    }
    xbc::expect_eq(report, p, slot[(t + 3) % n], p + 7 * ((t + 3) % n));
    xbc::expect_eq(report, 1000000 + p, token.parity(), (2 * p) & 1);  // two phases per iteration
    bar.arrive_and_wait();
  }
  if (busy == 0xffffffffu) report[4] = busy;  // keep the busy work
}

// Parity semantics (docs/mbarrier-semantics.md, P6): on a fresh barrier the phase of parity 1
// counts as complete and parity 0 does not; after phase 0 completes it is the other way.
XB_KERNEL void xbc_parity(unsigned long long* report, unsigned long long* seen) {
  __shared__ block_barrier bar;
  const unsigned t = threadIdx.x;
  if (t == 0) {
    init(&bar, 1);
    seen[0] = bar.try_wait_parity(true);
    seen[1] = bar.try_wait_parity(false);
    (void)bar.arrive();
    seen[2] = bar.try_wait_parity(false);
    seen[3] = bar.try_wait_parity(true);
    // P4: a token two phases old aliases the current phase. Each completed phase is waited
    // for before the next arrival (compute-sanitizer's synccheck reports an mbarrier arrival
    // whose thread skipped the wait for its previous phase).
    bar.wait_parity(false);
    auto t0 = bar.arrive();  // completes phase 1
    seen[4] = t0.parity();
    bar.wait(static_cast<xb::arrival_token&&>(t0));
    auto t1 = bar.arrive();  // completes phase 2, phase 3 current
    bar.wait(static_cast<xb::arrival_token&&>(t1));
    seen[5] = bar.try_wait_parity(true);  // phase 3 (parity 1) in progress
  }
  (void)report;
}

// arrive(update > 1): thread t arrives with update 1 + t % 3, in one call or split in two;
// the expected count is the sum, and the phase must not complete before all of it.
XB_KERNEL void xbc_arrive_update(unsigned long long* report, unsigned phases) {
  __shared__ block_barrier bar;
  __shared__ unsigned slot[1024];
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) {
    unsigned e = 0;
    for (unsigned i = 0; i < n; ++i) e += 1 + i % 3;
    init(&bar, e);
  }
  __syncthreads();
  const unsigned update = 1 + t % 3;
  for (unsigned p = 0; p < phases; ++p) {
    slot[t] = p ^ t;
    xb::arrival_token token;
    if (update > 1 && (p + t) % 2 == 0) {
      (void)bar.arrive(update - 1);
      token = bar.arrive(1);
    } else {
      token = bar.arrive(update);
    }
    bar.wait(static_cast<xb::arrival_token&&>(token));
    for (unsigned k = 1; k < 4; ++k) xbc::expect_eq(report, p * 8 + k, slot[(t + k * 97) % n], p ^ ((t + k * 97) % n));
    token = bar.arrive(update);
    bar.wait(static_cast<xb::arrival_token&&>(token));
  }
}

// arrive_and_drop lowers the expected count of later phases: in round p thread n-1-p
// contributes to the phase and drops out. The rest must neither deadlock (the count fell)
// nor pass early (every participant's data of the phase is visible); the completion
// function counts phases.
struct count_phases {
  unsigned* completed;
  XB_INLINE void operator()() noexcept { ++*completed; }
};

XB_KERNEL void xbc_drop(unsigned long long* report, unsigned long long* completed_out) {
  __shared__ xb::barrier<xb::thread_scope_block, count_phases> bar;
  __shared__ unsigned completed;
  __shared__ unsigned slot[1024];
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) {
    completed = 0;
    init(&bar, n, count_phases{&completed});
  }
  __syncthreads();
  for (unsigned p = 0;; ++p) {
    slot[t] = p + 1000 * t;
    if (t == n - 1 - p) {
      bar.arrive_and_drop();
      if (t == 0) *completed_out = completed;  // the last drop completed the last phase itself
      return;
    }
    bar.arrive_and_wait();
    xbc::expect_eq(report, p, completed, 2 * p + 1);
    for (unsigned k = 0; k < n - p; ++k) xbc::expect_eq(report, 100000 + p, slot[k], p + 1000 * k);
    bar.arrive_and_wait();
  }
}

// The completion function runs exactly once per phase and before any waiter returns: it
// sums the phase's slots and bumps a plain (non-atomic) counter; every waiter then checks
// both.
struct summarize {
  const unsigned* slot;
  unsigned* sums;
  unsigned* count;
  unsigned n;
  XB_INLINE void operator()() noexcept {
    unsigned s = 0;
    for (unsigned i = 0; i < n; ++i) s += slot[i];
    sums[*count % 2] = s;
    ++*count;
  }
};

XB_KERNEL void xbc_completion(unsigned long long* report, unsigned phases) {
  __shared__ xb::barrier<xb::thread_scope_block, summarize> bar;
  __shared__ unsigned slot[1024], sums[2], count;
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) {
    count = 0;
    init(&bar, n, summarize{slot, sums, &count, n});
  }
  __syncthreads();
  for (unsigned p = 0; p < phases; ++p) {
    slot[t] = 3 * p + t;
    bar.arrive_and_wait();
    xbc::expect_eq(report, p, count, 2 * p + 1);
    xbc::expect_eq(report, 100000 + p, sums[0], 3 * p * n + n * (n - 1) / 2);
    bar.arrive_and_wait();
  }
}

// One round of arrivals spans two phases: the barrier expects half the block, and every
// thread arrives once per round (arrive only: a waiter could fall two phases behind and
// alias its token). With a half that is not a multiple of the wave size (AMD's 64), one
// wave's arrivals complete the first phase and are counted in the second while the first's
// completion step runs: the completer and lanes that wait inside arrive() for its publish
// sit in the same wave. (The half stays a multiple of 32: CUDA combines a warp's arrivals
// into one, which must not exceed the phase's pending count.) On AMDGPU that deadlocks unless the waits come after the completion
// step (protocol.hpp 5.); everywhere it must lose no phase. (Two phases, not more: what
// arrives during a completion step counts in the next phase only, so more than that
// phase's count would be an over-arrival.)
XB_KERNEL void xbc_completion_spanning(unsigned long long* report, unsigned rounds) {
  __shared__ xb::barrier<xb::thread_scope_block, count_phases> bar;
  __shared__ unsigned completed;
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) {
    completed = 0;
    init(&bar, n / 2, count_phases{&completed});
  }
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    (void)bar.arrive();
    __syncthreads();
    xbc::expect_eq(report, r, completed, 2 * (r + 1));
    __syncthreads();  // nobody starts the next round while another thread still reads
  }
}

// The same without a completion function: n threads arrive once per round on a barrier of
// n/2, so each round completes two phases and the second phase's arrivals may land before
// the first arrival of the round's first phase armed it (the direct layouts' spill,
// protocol.hpp). After the round phase 2(r+1) is in progress: parity 1 reads complete and
// parity 0 does not.
XB_KERNEL void xbc_spanning(unsigned long long* report, unsigned rounds) {
  __shared__ block_barrier bar;
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) init(&bar, n / 2);
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    (void)bar.arrive();
    __syncthreads();
    if (t == 0) {
      xbc::expect_eq(report, 2 * r, bar.try_wait_parity(true), 1);
      xbc::expect_eq(report, 2 * r + 1, bar.try_wait_parity(false), 0);
    }
    __syncthreads();
  }
}

// Lanes of one warp arrive on two barriers in the same instruction: even threads on bars[0],
// odd ones on bars[1], each barrier expecting half the block. The arrival that ends a phase
// runs its step before it returns, whichever lanes share its warp, so after the round's
// __syncthreads both counts are r + 1. (On the native CUDA path one lane looks
// for the step per barrier the warp arrived on, engine_sm90_completion.hpp 6.; one look shared
// across both barriers leaves a step to nobody.)
// With `wait` set, every thread uses arrive_and_wait instead and checks its own barrier's
// count as soon as the call returns: a lane whose warp's look ran the step skips its wait
// on the native path, and must still find the step done.
XB_KERNEL void xbc_completion_lanes_on_two_barriers(unsigned long long* report, unsigned rounds, unsigned wait) {
  __shared__ xb::barrier<xb::thread_scope_block, count_phases> bars[2];
  __shared__ unsigned completed[2];
  const unsigned n = xbc::block_threads(), t = threadIdx.x;
  if (t == 0) {
    for (unsigned b = 0; b < 2; ++b) {
      completed[b] = 0;
      init(&bars[b], n / 2, count_phases{&completed[b]});
    }
  }
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    if (wait) {
      bars[t & 1].arrive_and_wait();
      xbc::expect_eq(report, 200000 + r, completed[t & 1], r + 1);
    } else {
      (void)bars[t & 1].arrive();
    }
    __syncthreads();
    xbc::expect_eq(report, r, completed[0], r + 1);
    xbc::expect_eq(report, 100000 + r, completed[1], r + 1);
    __syncthreads();  // nobody starts the next round while another thread still reads
  }
}

// A completion step that lasts: it counts the steps started, then waits (up to 20 us) for
// `late_goal` arrivals made while it runs, then counts itself done. Threads spin on
// `started` to arrive during a step: a side channel, not data the barrier orders, so it is
// an atomic add (compute-sanitizer's racecheck reported a plain store to it against the
// spinning loads).
struct slow_step {
  uint64_t* done;
  uint64_t* started;
  uint64_t* late;
  uint64_t late_goal;
  XB_INLINE void operator()() noexcept {
    (void)xbc::fetch_add_relaxed(started, 1);
    (void)xbc::spin_until([this] { return xbc::load_relaxed(late) >= late_goal; }, 20000);
    xbc::store_relaxed(done, xbc::load_relaxed(done) + 1);
  }
};

// A token taken during a completion step is for the next phase, and its wait returns only
// after that phase's own step. The barrier expects half the block: the first half arrives
// (no wait) and completes phase 2r; the second half arrives while step 2r runs, so its
// arrivals make phase 2r+1, and waits. After its wait both steps must be done. (Halves are
// whole warps and waves: a lane spinning on `started` never shares a wave with the
// completer's arrival on AMDGPU.)
XB_KERNEL void xbc_completion_token_in_step(unsigned long long* report, unsigned rounds) {
  __shared__ xb::barrier<xb::thread_scope_block, slow_step> bar;
  __shared__ uint64_t done, started, late;
  const unsigned n = xbc::block_threads(), t = threadIdx.x, half = n / 2;
  if (t == 0) {
    done = started = late = 0;
    init(&bar, half, slow_step{&done, &started, &late, half});
  }
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    if (t < half) {
      (void)bar.arrive();
    } else {
      const bool in_step = xbc::spin_until([&] { return xbc::load_relaxed(&started) >= 2 * r + 1; }, 5000000000ull);
      xbc::expect_eq(report, 200000 + r, in_step, 1);
      xb::arrival_token token = bar.arrive();
      (void)xbc::fetch_add_relaxed(&late, 1);
      bar.wait(static_cast<xb::arrival_token&&>(token));
      xbc::expect_eq(report, r, xbc::load_relaxed(&done), 2 * r + 2);
    }
    __syncthreads();
    xbc::expect_eq(report, 100000 + r, xbc::load_relaxed(&done), 2 * r + 2);
    __syncthreads();
    if (t == 0) xbc::store_relaxed(&late, 0);
    __syncthreads();
  }
}

// Drops counted in the next phase: of a fresh barrier expecting the whole block, the first
// half arrives and drops in phase 0; the second half arrives in phase 0, then drops while
// step 0 runs (which waits for those drops, up to 20 us), so its drops are phase 1's
// arrivals. Exactly two steps must run, and none after: nobody is left for phase 2.
XB_KERNEL void xbc_completion_drop_in_step(unsigned long long* report, unsigned rounds) {
  constexpr unsigned max_rounds = 8;
  __shared__ xb::barrier<xb::thread_scope_block, slow_step> bars[max_rounds];
  __shared__ uint64_t done[max_rounds], started[max_rounds], late[max_rounds];
  const unsigned n = xbc::block_threads(), t = threadIdx.x, half = n / 2;
  for (unsigned r = 0; r < rounds && r < max_rounds; ++r) {
    if (t == 0) {
      done[r] = started[r] = late[r] = 0;
      init(&bars[r], n, slow_step{&done[r], &started[r], &late[r], n - half});
    }
    __syncthreads();
    if (t < half) {
      bars[r].arrive_and_drop();
    } else {
      (void)bars[r].arrive();
      const bool in_step = xbc::spin_until([&] { return xbc::load_relaxed(&started[r]) >= 1; }, 5000000000ull);
      xbc::expect_eq(report, 200000 + r, in_step, 1);
      bars[r].arrive_and_drop();
      (void)xbc::fetch_add_relaxed(&late[r], 1);
    }
    __syncthreads();
    xbc::expect_eq(report, r, xbc::load_relaxed(&done[r]), 2);
    xbc::expect_eq(report, 100000 + r, xbc::load_relaxed(&started[r]), 2);
  }
}

// One call runs two steps: the barrier expects one arrival. Thread 0's arrive_and_wait
// completes phase 2r and runs its step; thread 64 arrives during that step, which counts
// in phase 2r+1 and fills it, so the step's end (its gate, on the native path) completes
// phase 2r+1 as well, and thread 0 may run that step too. Its wait must still return:
// the phase it waits for is long published, even though the publish count has moved two
// phases on. (Threads 0 and 64 sit in different warps and waves.)
XB_KERNEL void xbc_completion_two_steps_in_one_call(unsigned long long* report, unsigned rounds) {
  __shared__ xb::barrier<xb::thread_scope_block, slow_step> bar;
  __shared__ uint64_t done, started, late;
  const unsigned t = threadIdx.x;
  if (t == 0) {
    done = started = late = 0;
    init(&bar, 1, slow_step{&done, &started, &late, 1});
  }
  __syncthreads();
  for (unsigned r = 0; r < rounds; ++r) {
    if (t == 0) {
      bar.arrive_and_wait();
      xbc::expect_eq(report, r, xbc::load_relaxed(&done) >= 2 * r + 1, 1);
    } else if (t == 64) {
      const bool in_step = xbc::spin_until([&] { return xbc::load_relaxed(&started) >= 2 * r + 1; }, 5000000000ull);
      xbc::expect_eq(report, 200000 + r, in_step, 1);
      (void)bar.arrive();
      (void)xbc::fetch_add_relaxed(&late, 1);
    }
    __syncthreads();
    xbc::expect_eq(report, 100000 + r, xbc::load_relaxed(&done), 2 * r + 2);
    __syncthreads();
    if (t == 0) xbc::store_relaxed(&late, 0);
    __syncthreads();
  }
}
