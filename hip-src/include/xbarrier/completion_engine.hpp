// xbarrier/completion_engine.hpp - CUDA sm_90 native lowering of a block-scope barrier WITH
// a completion function (CCCL keeps these on its atomics path). Arrivals, tx-counts, bulk
// copies and waits are the hardware's; software only elects who runs the function.
//
// Words: w[0] the mbarrier M that counts arrivals and tx, w[1] the mbarrier P that
// publishes phases (count 1), w[2] the control word K:
//   bit 0       busy: a completion step or a drop holds K
//   bits 1..31  d, the number of completion steps done (mod 2^31)
//   bits 32..52 E, the participants left (init count minus drops)
//   bit 53      Z, the parity of the phase the drop that took E to 0 was counted in
//
// 1. The gate. M expects the init count plus one: the extra arrival, the gate, is given
//    for phase k+1 only after phase k's completion function ran (phase 0's at init). So M's
//    phase m satisfies d <= m <= d+1 at all times, test_wait.parity(M, d & 1) says exactly
//    "phase d ended, its step is not done", and once M's phase k has ended, d >= k.
// 2. The step. Whoever sees phase d ended while K is free claims K with one CAS (exactly
//    one thread wins), runs the function, arrives on P (publish), stores d+1 with K free
//    and gives the gate for d+1. The gate can end phase d+1 (its arrivals may all be in),
//    so the completer settles again. Observers: the arrival that ends a phase (it tests
//    its own state at once), a thread's complete_tx, a drop, and waiters and testers for a
//    phase the copy engine ended (no thread made that last change). A phase the copy
//    engine ends is seen by no one only if no thread ever waits for it, or for a later
//    phase; a kernel must wait to know its bulk copies landed, so every defined program
//    runs every step before anyone sees its effects.
// 3. Waiters wait on M for their own phase k (the token's state: exact, even for a token
//    taken during step k-1, whose arrival M counted in phase k), then on P for parity k
//    (exact: after M's phase k ended, d is k or k+1). Ordering: arrivals release into M,
//    the claimant's test_wait acquires them; its arrive on P releases the function's
//    writes to waiters' try_wait. All of it is CTA scope, which is the barrier's scope.
// 4. Busy K. A thread that sees K busy leaves the step to the holder. A completer holds K
//    while no phase can end (its gate is not given yet); a dropper holds it briefly and
//    settles after releasing. The observer's "phase ended, K busy" and the dropper's "K
//    free, phase not ended" are ruled out by fence.sc on both sides (store-load order).
// 5. Drops. A drop takes K (so no step runs meanwhile, and M's phase is d or d+1), makes
//    its arrive_drop, learns from the state's parity which of the two phases counted it,
//    lowers E and, if E reaches 0, records that parity as Z. The completer of phase d
//    withholds the gate when E = 0 and Z = d & 1: nobody is left for phase d+1, and a
//    gate alone would end phase after phase. A drop counted in phase d+1 leaves Z = (d+1)
//    & 1, so the gate for d+1 is still given; that phase's own completer withholds the
//    next. Only completers d and d+1 can see E = 0 (no gate follows), so one bit suffices.
//
// max() of such a barrier is one less than the protocol's on every target (the gate's
// count), so portable code sees one value.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "fence.hpp"
#include "platform.hpp"

#if XB_NATIVE_MBARRIER
#include "platform/cuda_mbarrier.hpp"

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

  static XB_INLINE uint32_t done_steps(uint64_t k) { return uint32_t(k & step_mask) >> 1; }
  static XB_INLINE uint64_t participants(uint64_t k) { return (k & e_mask) >> e_shift; }
  // K free, one more step done, E and Z kept (k is the value the step was claimed from).
  static XB_INLINE uint64_t after_step(uint64_t k) {
    return (k & ~(step_mask | busy)) | ((uint64_t(done_steps(k) + 1) << 1) & step_mask);
  }

  static XB_INLINE bool here(const uint64_t* w) { return __isShared(w); }
  static XB_INLINE uint64_t* published(uint64_t* w) { return w + 1; }
  static XB_INLINE const uint64_t* published(const uint64_t* w) { return w + 1; }
  static XB_INLINE uint64_t* control(uint64_t* w) { return w + 2; }
  static XB_INLINE uint64_t* control(const uint64_t* w) { return const_cast<uint64_t*>(w) + 2; }

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit) {
    if (!here(w)) return fallback::init(w, expected, limit);
    mbarrier::init(w, uint32_t(expected) + 1);
    mbarrier::init(published(w), 1);
    platform::store<ms>(control(w), uint64_t(expected) << e_shift, mem_order::relaxed);
    if (expected > 0) (void)mbarrier::arrive(w, 1);  // phase 0's gate
    mbarrier::fence_init();
  }

  // Runs every step that is due (2. and 4. above). `fn` runs in this thread or in another.
  template <class F>
  static XB_DEVICE void settle(uint64_t* w, F& fn) {
    for (;;) {
      uint64_t k = platform::load<ms>(control(w), mem_order::acquire);
      if (k & busy) return;
      if (!mbarrier::test_wait_parity(w, done_steps(k) & 1)) return;
      if (!platform::compare_exchange<ms>(control(w), k, k | busy, mem_order::acq_rel)) continue;
      fn();
      const bool nobody_left = participants(k) == 0 && ((k & z_bit) != 0) == bool(done_steps(k) & 1);
      (void)mbarrier::arrive(published(w), 1);
      platform::store<ms>(control(w), after_step(k), mem_order::release);
      if (nobody_left) return;
      (void)mbarrier::arrive(w, 1);  // the gate for the next phase
    }
  }
  // An observer that saw a phase end settles after a fence.sc (4. above).
  template <class F>
  static XB_INLINE void settle_observed(uint64_t* w, F& fn) {
    membar_cta();
    settle(w, fn);
  }

  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& fn) {
    if (!here(w)) return fallback::arrive(w, update, fn);
    const uint64_t state = mbarrier::arrive(w, uint32_t(update));
    if (mbarrier::test_wait(w, state)) settle_observed(w, fn);
    return state;
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& fn) {
    if (!here(w)) return fallback::arrive_and_drop(w, fn);
    uint64_t k = platform::load<ms>(control(w), mem_order::relaxed);
    for (;;) {  // take K: a step that holds it ends shortly
      if (k & busy) {
        k = platform::load<ms>(control(w), mem_order::relaxed);
        continue;
      }
      if (platform::compare_exchange<ms>(control(w), k, k | busy, mem_order::acq_rel)) break;
    }
    const uint64_t state = mbarrier::arrive_drop(w);
    const bool parity = parity_of_token(state);
    uint64_t next = k - e_one;
    if (participants(next) == 0) next = parity ? (next | z_bit) : (next & ~z_bit);
    platform::store<ms>(control(w), next, mem_order::release);
    settle_observed(w, fn);
  }
  template <class F>
  static XB_INLINE void arrive_and_wait(uint64_t* w, F& fn) {
    if (!here(w)) return fallback::arrive_and_wait(w, fn);
    wait_on(w, arrive(w, 1, fn), fn);
  }

  // The waits see M's phase end first, settle if its step is not published, then wait on P.
  template <class F>
  static XB_INLINE void wait_on(uint64_t* w, uint64_t token, F& fn) {
    while (!mbarrier::try_wait(w, token)) {
    }
    publish_wait(w, parity_of_token(token), fn);
  }
  template <class F>
  static XB_INLINE void publish_wait(uint64_t* w, bool parity, F& fn) {
    if (mbarrier::test_wait_parity(published(w), parity)) return;
    settle_observed(w, fn);
    while (!mbarrier::try_wait_parity(published(w), parity)) {
    }
  }
  template <class F>
  static XB_INLINE void wait(const uint64_t* w, uint64_t token, F& fn) {
    if (!here(w)) return fallback::wait(w, token);
    wait_on(const_cast<uint64_t*>(w), token, fn);
  }
  template <class F>
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity, F& fn) {
    if (!here(w)) return fallback::wait_parity(w, parity);
    while (!mbarrier::try_wait_parity(w, parity)) {
    }
    publish_wait(const_cast<uint64_t*>(w), parity, fn);
  }
  // A test that sees M's phase end may run the step: a polling loop may be the only
  // observer of a phase the copy engine ended.
  template <class F>
  static XB_INLINE bool published_now(uint64_t* w, bool parity, F& fn) {
    if (mbarrier::test_wait_parity(published(w), parity)) return true;
    settle_observed(w, fn);
    return mbarrier::test_wait_parity(published(w), parity);
  }
  template <class F>
  static XB_INLINE bool test(const uint64_t* w, uint64_t token, F& fn) {
    if (!here(w)) return fallback::test(w, token);
    return mbarrier::test_wait(w, token) && published_now(const_cast<uint64_t*>(w), parity_of_token(token), fn);
  }
  template <class F>
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity, F& fn) {
    if (!here(w)) return fallback::test_parity(w, parity);
    return mbarrier::test_wait_parity(w, parity) && published_now(const_cast<uint64_t*>(w), parity, fn);
  }
  template <class F>
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns, F& fn) {
    if (!here(w)) return fallback::wait_for(w, token, ns);
    uint64_t* m = const_cast<uint64_t*>(w);
    const bool parity = parity_of_token(token);
    return mbarrier_engine::bounded(ns, [m, token, parity, &fn](uint32_t hint) {
      const bool ended = hint ? mbarrier::try_wait_hint(m, token, hint) : mbarrier::test_wait(m, token);
      return ended && published_now(m, parity, fn);
    });
  }
  template <class F>
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns, F& fn) {
    if (!here(w)) return fallback::wait_parity_for(w, parity, ns);
    uint64_t* m = const_cast<uint64_t*>(w);
    return mbarrier_engine::bounded(ns, [m, parity, &fn](uint32_t hint) {
      const bool ended = hint ? mbarrier::try_wait_parity_hint(m, parity, hint) : mbarrier::test_wait_parity(m, parity);
      return ended && published_now(m, parity, fn);
    });
  }

  template <class F>
  static XB_INLINE uint64_t arrive_tx(uint64_t* w, ptrdiff_t arrivals, ptrdiff_t tx, F& fn) {
    if (!here(w)) return fallback::arrive_tx(w, arrivals, tx, fn);
    const uint64_t state = mbarrier_engine::arrive_tx(w, arrivals, tx, fn);
    if (mbarrier::test_wait(w, state)) settle_observed(w, fn);
    return state;
  }
  template <class F>
  static XB_INLINE void expect_tx(uint64_t* w, ptrdiff_t tx, F& fn) {
    mbarrier_engine::expect_tx(w, tx, fn);  // raises the count: ends no phase
  }
  template <class F>
  static XB_INLINE void complete_tx(uint64_t* w, ptrdiff_t tx, F& fn, uint32_t op) {
    if (!here(w)) return fallback::complete_tx(w, tx, fn, op);
    mbarrier_engine::complete_tx(w, tx, fn, op);
    settle_observed(w, fn);
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
