// xbarrier/engine_sm90_completion.hpp - the native engine of CUDA sm_90 release builds
// (XB_NATIVE_MBARRIER) for a block-scope barrier WITH a completion function (CCCL keeps these
// on its atomics path). Arrivals, tx-counts, bulk copies and waits are the hardware's;
// software only elects who runs the function. Empty on every other target and build.
//
// Words: w[0] the mbarrier M that counts arrivals and tx, w[1] the mbarrier P that
// publishes phases (count 1), w[2] the control word K:
//   bit 0       busy: a completion step holds K
//   bits 1..31  d, the number of completion steps done (mod 2^31); P's phase is d
//   bits 32..52 E, the participants left (init count minus drops)
//   bit 53      Z, the parity of the phase the drop that took E to 0 was counted in
//   bit 54      dropping: a drop holds K
//
// 1. The gate. M expects the init count plus one: the extra arrival, the gate, is given
//    for phase k+1 only after phase k's completion function ran (phase 0's at init). So M's
//    phase m satisfies d <= m <= d+1 at all times, and test_wait.parity(M, d & 1) says
//    exactly "phase d ended, its step is not done".
// 2. The step. Whoever sees phase d ended while K is free claims K with one CAS (exactly
//    one thread wins), runs the function, arrives on P (publish), stores d+1 with K free
//    and gives the gate for d+1. The gate can end phase d+1 (its arrivals may all be in),
//    so the completer settles again. Who looks: an arrival that sees its phase ended right
//    after it (one lane for the lanes of a warp that arrived together, 6.); a thread's
//    complete_tx or expect_tx (either can end a phase: docs/mbarrier-semantics.md, P1, P3);
//    a drop; and a waiter whose phase is not published when its try_wait on P gives up,
//    which covers a phase the copy engine ended after the last arrival. A phase the copy engine ends is seen by no
//    one only if no thread ever waits for it; a kernel must wait to know its bulk copies
//    landed, so every defined program runs every step before anyone sees its effects.
// 3. Tokens and waits. An arrival counted in phase j while step j-1 is not published (it
//    came during that step) waits until d moves past j-1 before it returns, as the
//    protocol's does, so every token's phase j has d >= j once arrive returns: P's phase is j or j+1
//    and a parity wait on P is exact, as it is for a plain mbarrier. Which phase an arrival
//    was counted in follows from its state's parity (bit 63) and a stable read of d around
//    a test of M. A call that saw its own phase end, and whose warp's look (6.) then ran a
//    step, finds that phase published and returns without waiting (its token may then be
//    two phases old, as a plain mbarrier's is when two phases end before the wait).
//    Ordering: arrivals release into M, the claimant's test_wait acquires them; its arrive
//    on P releases the function's writes to waiters' try_wait, and K's store of d+1 after
//    it is a release, so a thread that reads d+1 finds P published. All of it is CTA scope,
//    the barrier's scope.
// 4. Handing the step over. A thread that sees K held leaves the step to the holder. A
//    completer holds K while no phase can end (its gate is not given yet), so whatever
//    phase the thread saw end is the one being run or an earlier one. A dropper holds K
//    briefly and settles after releasing: "phase ended, K held" on the observer's side and
//    "K free, phase not ended" on the dropper's are ruled out by a fence.sc on both sides
//    (store-load order), which only an observer that finds a drop holding K pays. Waiters
//    need no such pairing: they look again each time try_wait gives up.
// 5. Drops. A drop takes K (so no step runs meanwhile, and M's phase is d or d+1), makes
//    its arrive_drop, learns from the state's parity which of the two phases counted it,
//    lowers E and, if E reaches 0, records that parity as Z. The completer of phase d
//    withholds the gate when E = 0 and Z = d & 1: nobody is left for phase d+1, and a
//    gate alone would end phase after phase. A drop counted in phase d+1 leaves Z = (d+1)
//    & 1, so the gate for d+1 is still given; that phase's own completer withholds the
//    next. Only completers d and d+1 can see E = 0 (no gate follows), so one bit suffices.
//    A drop may wait for a running step to end (it needs K).
// 6. One look per warp. An arrival whose test of M saw its phase j end knows step j-1 is
//    published (M's phase j ended, so its gate was given), and it needs no stable read of
//    d. Of the lanes of a warp that run after_arrival together on one barrier
//    (__match_any_sync over __activemask()), only the lowest that saw an end settles, after
//    a __syncwarp that orders every lane's test of M before its read of K: each step it
//    claims is at or past every such lane's j (d >= j once phase j ended). So when the
//    leader ran a step, every lane that saw its phase end has it published; the leader
//    passes the step count it published in the shuffle that ends its look, and a lane whose
//    acquire read of K then shows that count or more returns without waiting on P (a second
//    __syncwarp would order the same, for 180 cycles more per round trip). No lane of the
//    group waits on P while the leader holds the step. Letting every lane that saw an end
//    settle instead costs one CAS per lane on K, serialized behind the step: the round trip
//    at 128 threads on the H200 was 1.55x slower that way. A completion function runs on the
//    leader while its warp-mates wait in that shuffle, so it must not use warp-wide
//    collectives (as with any function one thread runs).
//
// max() of such a barrier is one less than the protocol's on every target (the gate's
// count), so portable code sees one value.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "engine_portable.hpp"
#include "engine_sm90_mbarrier.hpp"
#include "fence.hpp"
#include "platform.hpp"

#if XB_NATIVE_MBARRIER
namespace xb {
namespace detail {

struct mbarrier_completion_engine {
  using fallback = protocol_engine<thread_scope_block>;
  static constexpr mem_scope ms = mem_scope::block;

  // The control word.
  static constexpr uint64_t busy = 1;
  static constexpr uint64_t step_mask = 0xfffffffeull;
  static constexpr unsigned e_shift = 32;
  static constexpr uint64_t e_one = uint64_t(1) << e_shift;
  static constexpr uint64_t e_mask = ((uint64_t(1) << 21) - 1) << e_shift;
  static constexpr uint64_t z_bit = uint64_t(1) << 53;
  static constexpr uint64_t dropping = uint64_t(1) << 54;
  // The longest sleep of a timed wait on P between its looks for an unclaimed step (ns).
  static constexpr uint32_t publish_hint_ns = 1000;

  static XB_INLINE uint32_t done_steps(uint64_t k) { return uint32_t(k & step_mask) >> 1; }
  static XB_INLINE uint64_t participants(uint64_t k) { return (k & e_mask) >> e_shift; }
  // K free, one more step done, E and Z kept (k: what the step was claimed from).
  static XB_INLINE uint64_t after_step(uint64_t k) {
    return (k & ~(step_mask | busy)) | ((uint64_t(done_steps(k) + 1) << 1) & step_mask);
  }

  static XB_INLINE bool here(const uint64_t* w) { return mbarrier_engine::here(w); }
  static XB_INLINE uint64_t* published(uint64_t* w) { return w + 1; }
  static XB_INLINE uint64_t* control(uint64_t* w) { return w + 2; }
  static XB_INLINE uint64_t* mut(const uint64_t* w) { return const_cast<uint64_t*>(w); }
  static XB_INLINE uint64_t read_control(uint64_t* w) { return platform::load<ms>(control(w), mem_order::acquire); }
  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit) {
    if (!here(w)) return fallback::init(w, expected, limit);
    mbarrier::init(w, uint32_t(expected) + 1);
    mbarrier::init(published(w), 1);
    platform::store<ms>(control(w), uint64_t(expected) << e_shift, mem_order::relaxed);
    if (expected > 0) (void)mbarrier::arrive(w, 1);  // phase 0's gate
    mbarrier::fence_init();
  }

  // Runs every step that is due (2. and 4. above); whether this thread ran one. After each
  // step, *published_steps (if given) holds the step count it published.
  template <class F>
  static XB_DEVICE bool settle(uint64_t* w, F& fn, uint32_t* published_steps = nullptr) {
    bool ran = false;
    for (;;) {
      uint64_t k = read_control(w);
      if (k & dropping) {
        membar_cta();
        k = read_control(w);
        if (k & dropping) return ran;
      }
      if (k & busy) return ran;
      if (!mbarrier::test_wait_parity(w, done_steps(k) & 1)) return ran;
      if (!platform::compare_exchange<ms>(control(w), k, k | busy, mem_order::relaxed)) continue;
      fn();
      ran = true;
      const bool nobody_left = participants(k) == 0 && ((k & z_bit) != 0) == bool(done_steps(k) & 1);
      (void)mbarrier::arrive(published(w), 1);
      // Release: whoever reads d+1 must also find P published (3. relies on P >= d).
      platform::store<ms>(control(w), after_step(k), mem_order::release);
      if (published_steps) *published_steps = done_steps(after_step(k));
      if (nobody_left) return ran;
      // The gate for the next phase (it releases K's store). Its own state tells whether it
      // ended that phase: a test without it may run before the arrival lands.
      const uint64_t gate = mbarrier::arrive(w, 1);
      if (!mbarrier::test_wait(w, gate)) return ran;
    }
  }

  static XB_INLINE uint32_t lane() {
    uint32_t id;
    asm("mov.u32 %0, %%laneid;" : "=r"(id));
    return id;
  }

  // After an arrival with `state` (2., 3. and 6.): one that sees the phase ended settles;
  // an arrival counted during the previous phase's step waits for its publish. Whether this
  // call's phase is published because a step of this warp ran after it ended.
  template <class F>
  static XB_DEVICE bool after_arrival(uint64_t* w, uint64_t state, F& fn) {
    const bool ended = mbarrier::test_wait(w, state);
    const bool parity = parity_of_token(state);
    const uint32_t together = __match_any_sync(__activemask(), reinterpret_cast<unsigned long long>(w));
    const uint32_t seen = __ballot_sync(together, ended);
    if (seen) {
      const uint32_t leader = uint32_t(__ffs(seen) - 1);
      __syncwarp(together);  // memory order: every lane's test of M before the leader reads K
      uint32_t steps = 0;
      const bool ran = lane() == leader && settle(w, fn, &steps);
      // 0 if the leader ran no step, else 1 + twice the step count it published last.
      const uint32_t led = __shfl_sync(together, ran ? 1u + (steps << 1) : 0u, leader);
      if (ran) return true;
      if (ended && led != 0) {
        // A shuffle orders no memory: an acquire read of K at or past the leader's publish
        // does. Every later write of K continues the order: a completer's relaxed CAS (an RMW
        // in the release sequence), its release store, or a drop's release store.
        const uint32_t past = (done_steps(read_control(w)) - (led >> 1)) & (step_mask >> 1);
        if (past < (1u << 30)) return true;
      }
    }
    if (ended) return false;  // 6.: phase j ended in M, so P has published j-1
    // A stable d around the test of M: M's phase is d or d+1, so the state's parity says
    // whether this arrival was counted in phase d+1, ahead of P.
    for (;;) {
      const uint32_t d = done_steps(read_control(w));
      const bool ended_now = mbarrier::test_wait(w, state);
      if (done_steps(read_control(w)) != d) continue;
      if (ended_now || parity == bool(d & 1)) return false;
      // Counted during step d: until d moves on. (Not P's parity: with this arrival in,
      // phase d+1 may end and P move two phases before this thread looks.)
      // Its arrival in phase d+1 proves phase d ended, so look for the step first.
      while (done_steps(read_control(w)) == d) {
        if (!settle(w, fn)) (void)mbarrier::try_wait_parity(published(w), bool(d & 1));
      }
      return false;
    }
  }

  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& fn) {
    if (!here(w)) return fallback::arrive(w, update, fn);
    const uint64_t state = mbarrier::arrive(w, uint32_t(update));
    (void)after_arrival(w, state, fn);
    return state;
  }
  template <class F>
  static XB_INLINE void arrive_and_wait(uint64_t* w, F& fn) {
    if (!here(w)) return fallback::arrive_and_wait(w, fn);
    const uint64_t state = mbarrier::arrive(w, 1);
    if (after_arrival(w, state, fn)) return;
    publish_wait(w, parity_of_token(state), fn);
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& fn) {
    if (!here(w)) return fallback::arrive_and_drop(w, fn);
    uint64_t k = platform::load<ms>(control(w), mem_order::relaxed);
    for (;;) {  // take K: a step or another drop that holds it ends shortly
      if (k & (busy | dropping)) {
        k = platform::load<ms>(control(w), mem_order::relaxed);
        continue;
      }
      if (platform::compare_exchange<ms>(control(w), k, k | dropping, mem_order::acq_rel)) break;
    }
    const uint64_t state = mbarrier::arrive_drop(w);
    const bool parity = parity_of_token(state);
    uint64_t next = k - e_one;
    if (participants(next) == 0) next = parity ? (next | z_bit) : (next & ~z_bit);
    // Release: a lane that learns from K that a step was published (6.) may read this.
    platform::store<ms>(control(w), next, mem_order::release);
    membar_cta();  // 4.: then settle sees any phase that ended while this drop held K
    (void)settle(w, fn);
  }

  // Waits until P publishes the phase of parity `parity`, looking for an unclaimed step
  // each time try_wait gives up (its suspend ends at a hardware time limit; a suspend hint
  // would keep the thread asleep for the whole hint, 1 us per phase on the H200) (2.).
  template <class F>
  static XB_DEVICE void publish_wait(uint64_t* w, bool parity, F& fn) {
    while (!mbarrier::try_wait_parity(published(w), parity)) {
      if (settle(w, fn)) return;  // it ran the step of this phase or a later one
    }
  }
  // The same without blocking: one look at P, one for an unclaimed step, one more at P.
  template <class F>
  static XB_INLINE bool published_now(uint64_t* w, bool parity, F& fn) {
    if (mbarrier::test_wait_parity(published(w), parity)) return true;
    if (settle(w, fn)) return true;
    return mbarrier::test_wait_parity(published(w), parity);
  }

  template <class F>
  static XB_INLINE void wait(const uint64_t* w, uint64_t token, F& fn) {
    if (!here(w)) return fallback::wait(w, token);
    publish_wait(mut(w), parity_of_token(token), fn);
  }
  template <class F>
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity, F& fn) {
    if (!here(w)) return fallback::wait_parity(w, parity);
    publish_wait(mut(w), parity, fn);
  }
  template <class F>
  static XB_INLINE bool test(const uint64_t* w, uint64_t token, F& fn) {
    if (!here(w)) return fallback::test(w, token);
    return published_now(mut(w), parity_of_token(token), fn);
  }
  template <class F>
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity, F& fn) {
    if (!here(w)) return fallback::test_parity(w, parity);
    return published_now(mut(w), parity, fn);
  }
  template <class F>
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns, F& fn) {
    if (!here(w)) return fallback::wait_for(w, token, ns);
    return wait_parity_for(w, parity_of_token(token), ns, fn);
  }
  template <class F>
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns, F& fn) {
    if (!here(w)) return fallback::wait_parity_for(w, parity, ns);
    uint64_t* m = mut(w);
    return mbarrier_engine::bounded(ns, [m, parity, &fn](uint32_t hint) {
      if (published_now(m, parity, fn)) return true;
      return hint && mbarrier::try_wait_parity_hint(published(m), parity, hint < publish_hint_ns ? hint : publish_hint_ns);
    });
  }

  template <class F>
  static XB_INLINE uint64_t arrive_tx(uint64_t* w, ptrdiff_t arrivals, ptrdiff_t tx, F& fn) {
    if (!here(w)) return fallback::arrive_tx(w, arrivals, tx, fn);
    const uint64_t state = mbarrier_engine::arrive_tx(w, arrivals, tx, fn);
    (void)after_arrival(w, state, fn);
    return state;
  }
  // expect_tx and complete_tx can end the phase (bytes completed before they were
  // expected: docs/mbarrier-semantics.md, P1). Both are relaxed: the fence.sc orders the
  // look at K after them.
  template <class F>
  static XB_INLINE void expect_tx(uint64_t* w, ptrdiff_t tx, F& fn) {
    if (!here(w)) return fallback::expect_tx(w, tx, fn);
    mbarrier::expect_tx(w, uint32_t(tx));
    membar_cta();
    (void)settle(w, fn);
  }
  template <class F>
  static XB_INLINE void complete_tx(uint64_t* w, ptrdiff_t tx, F& fn, uint32_t op) {
    if (!here(w)) return fallback::complete_tx(w, tx, fn, op);
    mbarrier_engine::complete_tx(w, tx, fn, op);
    membar_cta();
    (void)settle(w, fn);
  }
  template <class F>
  static XB_INLINE void copy_tx(void* dst, const void* src, size_t bytes, uint64_t* w, F& fn) {
    mbarrier_engine::copy_tx(dst, src, bytes, w, fn);  // the copy engine; waiters settle
  }
  static XB_INLINE bool bulk_possible(void* dst, const void* src, size_t bytes, const uint64_t* w, bool aligned) {
    return mbarrier_engine::bulk_possible(dst, src, bytes, w, aligned);
  }
  static XB_INLINE void copy_in_phase(void* dst, const void* src, size_t bytes, uint64_t* w, bool bulk_ok) {
    mbarrier_engine::copy_in_phase(dst, src, bytes, w, bulk_ok);
  }
};

}  // namespace detail
}  // namespace xb
#endif
