// xbarrier/engine.hpp - how each kind of barrier is lowered. xb::barrier forwards every
// operation to engine_for<Scope, Completion>:
//   protocol_engine  the portable protocol (protocol.hpp) on this target's platform layer:
//                    every barrier on AMD GPUs and the host, the emulated CUDA variant,
//                    checked builds, and barriers the hardware cannot hold.
//   mbarrier_engine  CUDA sm_90 native: a block-scope barrier without a completion function
//                    is the PTX mbarrier object itself (platform/cuda_mbarrier.hpp). One that
//                    turns out not to be in shared memory falls back to the protocol, as
//                    CCCL's does.
//   direct_engine    device or system scope without a completion function, unchecked builds,
//                    every target: the direct layout (protocol.hpp), whose last arrival
//                    publishes the phase in the same atomic.
//   mbarrier_completion_engine
//                    CUDA sm_90 native, block scope with a completion function (which CCCL
//                    leaves on its atomics path): two mbarriers and a claim counter, below.
//
// Tokens are 64-bit states whose bit 63 is the parity of the phase the arrival was counted
// in: the mbarrier state as the hardware returns it, or the parity alone from the protocol.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "platform.hpp"
#include "protocol.hpp"
#if defined(XB_PLATFORM_CUDA)
#include "platform/cuda_mbarrier.hpp"
#endif

namespace xb {

struct empty_completion {
  XB_INLINE void operator()() const noexcept {}
};

namespace detail {

// The words of a barrier's state: the mbarrier lowering of a barrier with a completion
// function needs two beyond the first (every target keeps the same layout).
template <class Completion>
struct state_words {
  static constexpr unsigned value = 3;
};
template <>
struct state_words<empty_completion> {
  static constexpr unsigned value = 1;
};

// max() of a barrier type. A block-scope barrier with a completion function gives one count
// of its mbarrier to the completion step (mbarrier_completion_engine), on every target alike.
template <thread_scope Scope, class Completion, int64_t ProtocolMax>
struct max_count_of {
  static constexpr bool block_like = Scope == thread_scope_block || Scope == thread_scope_thread;
  static constexpr int64_t value = block_like && state_words<Completion>::value > 1 ? ProtocolMax - 1 : ProtocolMax;
};

XB_INLINE constexpr uint64_t token_of_parity(bool parity) { return uint64_t(parity) << 63; }
XB_INLINE constexpr bool parity_of_token(uint64_t token) { return (token >> 63) != 0; }

template <thread_scope Scope>
struct protocol_engine {
  using proto = protocol<platform, Scope>;
  static constexpr bool native = false;

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit = proto::max_count) {
    proto::init(w, expected, limit);
  }
  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& completion) {
    return token_of_parity(proto::arrive(w, update, completion, false));
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& completion) {
    (void)proto::arrive(w, 1, completion, true);
  }
  static XB_INLINE void wait(const uint64_t* w, uint64_t token) { proto::wait_parity(w, parity_of_token(token)); }
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity) { proto::wait_parity(w, parity); }
  static XB_INLINE bool test(const uint64_t* w, uint64_t token) { return proto::test_parity(w, parity_of_token(token)); }
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity) { return proto::test_parity(w, parity); }
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns) {
    return proto::wait_parity_for(w, parity_of_token(token), ns);
  }
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    return proto::wait_parity_for(w, parity, ns);
  }
  // The tx operations; the caller has checked scope and ranges.
  template <class F>
  static XB_INLINE uint64_t arrive_tx(uint64_t* w, ptrdiff_t arrivals, ptrdiff_t tx, F& completion) {
    return token_of_parity(proto::tx_update(w, uint32_t(arrivals), tx, completion, XB_OP_ARRIVE_TX));
  }
  template <class F>
  static XB_INLINE void expect_tx(uint64_t* w, ptrdiff_t tx, F& completion) {
    (void)proto::tx_update(w, 0, tx, completion, XB_OP_EXPECT_TX);
  }
  template <class F>
  static XB_INLINE void complete_tx(uint64_t* w, ptrdiff_t tx, F& completion, uint32_t op) {
    (void)proto::tx_update(w, 0, -int64_t(tx), completion, op);
  }
  // memcpy_async_tx: the calling thread copies, then completes the bytes.
  template <class F>
  static XB_INLINE void copy_tx(void* dst, const void* src, size_t bytes, uint64_t* w, F& completion) {
    platform::copy(dst, src, bytes);
    complete_tx(w, ptrdiff_t(bytes), completion, XB_OP_MEMCPY_ASYNC_TX);
  }
  // memcpy_async bound to the barrier's current phase: done before the call returns, so the
  // caller's own (later) arrival orders it.
  static XB_INLINE void copy_in_phase(void* dst, const void* src, size_t bytes, uint64_t*, bool) {
    platform::copy(dst, src, bytes);
  }
};

// The direct layout for arrivals; waits are the protocol's (the phase bit is bit 63 in
// every layout).
template <thread_scope Scope>
struct direct_engine : protocol_engine<Scope> {
  using direct = direct_protocol<platform, Scope>;
  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t = 0) { direct::init(w, expected); }
  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F&) {
    return token_of_parity(direct::arrive(w, update, false));
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F&) {
    (void)direct::arrive(w, 1, true);
  }
};

#if XB_NATIVE_MBARRIER
// Every function tests where the barrier lives first: for a __shared__ barrier the compiler
// folds the test away; a block-scope barrier in global memory takes the protocol.
struct mbarrier_engine {
  using fallback = protocol_engine<thread_scope_block>;
  static constexpr bool native = true;
  static XB_INLINE bool here(const uint64_t* w) { return __isShared(w); }

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit) {
    if (!here(w)) return fallback::init(w, expected, limit);
    mbarrier::init(w, uint32_t(expected));
    mbarrier::fence_init();
  }
  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& completion) {
    return here(w) ? mbarrier::arrive(w, uint32_t(update)) : fallback::arrive(w, update, completion);
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& completion) {
    if (here(w)) (void)mbarrier::arrive_drop(w);
    else fallback::arrive_and_drop(w, completion);
  }
  // No back-off: try_wait suspends in the SYNCS unit until the phase completes or times out.
  static XB_INLINE void wait(const uint64_t* w, uint64_t token) {
    if (!here(w)) return fallback::wait(w, token);
    while (!mbarrier::try_wait(w, token)) {
    }
  }
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity) {
    if (!here(w)) return fallback::wait_parity(w, parity);
    while (!mbarrier::try_wait_parity(w, parity)) {
    }
  }
  static XB_INLINE bool test(const uint64_t* w, uint64_t token) {
    return here(w) ? mbarrier::test_wait(w, token) : fallback::test(w, token);
  }
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity) {
    return here(w) ? mbarrier::test_wait_parity(w, parity) : fallback::test_parity(w, parity);
  }
  // try_wait with the remaining time as its suspend hint, until done or out of time.
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns) {
    if (!here(w)) return fallback::wait_for(w, token, ns);
    const uint64_t start = platform::now_ns();
    for (;;) {
      const uint64_t spent = platform::now_ns() - start;
      if (spent >= ns) return mbarrier::test_wait(w, token);
      const uint64_t left = ns - spent;
      if (mbarrier::try_wait_hint(w, token, left > 0xffffffffu ? 0xffffffffu : uint32_t(left))) return true;
    }
  }
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    if (!here(w)) return fallback::wait_parity_for(w, parity, ns);
    const uint64_t start = platform::now_ns();
    for (;;) {
      const uint64_t spent = platform::now_ns() - start;
      if (spent >= ns) return mbarrier::test_wait_parity(w, parity);
      const uint64_t left = ns - spent;
      if (mbarrier::try_wait_parity_hint(w, parity, left > 0xffffffffu ? 0xffffffffu : uint32_t(left))) return true;
    }
  }
  // arrive.expect_tx has no arrival count: for more than one arrival, raise the tx-count
  // first (the phase cannot complete in between: our arrivals are still pending).
  template <class F>
  static XB_INLINE uint64_t arrive_tx(uint64_t* w, ptrdiff_t arrivals, ptrdiff_t tx, F& completion) {
    if (!here(w)) return fallback::arrive_tx(w, arrivals, tx, completion);
    if (arrivals == 1) return mbarrier::arrive_expect_tx(w, uint32_t(tx));
    mbarrier::expect_tx(w, uint32_t(tx));
    return mbarrier::arrive(w, uint32_t(arrivals));
  }
  template <class F>
  static XB_INLINE void expect_tx(uint64_t* w, ptrdiff_t tx, F& completion) {
    if (here(w)) mbarrier::expect_tx(w, uint32_t(tx));
    else fallback::expect_tx(w, tx, completion);
  }
  // mbarrier.complete_tx is relaxed only (the copy engine orders its own bytes); a thread
  // completing bytes it wrote itself releases them first, as the protocol's RMW does.
  template <class F>
  static XB_INLINE void complete_tx(uint64_t* w, ptrdiff_t tx, F& completion, uint32_t op) {
    if (!here(w)) return fallback::complete_tx(w, tx, completion, op);
    __threadfence_block();
    mbarrier::complete_tx(w, uint32_t(tx));
  }
  // The copy engine moves the bytes and completes them on the barrier when they land.
  template <class F>
  static XB_INLINE void copy_tx(void* dst, const void* src, size_t bytes, uint64_t* w, F& completion) {
    if (here(w)) mbarrier::bulk_load(dst, src, uint32_t(bytes), w);
    else fallback::copy_tx(dst, src, bytes, w, completion);
  }
  // cuda::memcpy_async on sm_90: a bulk copy whose bytes the barrier's current phase
  // expects (issued first, expected after: the tx-count may go negative meanwhile, and the
  // caller's own arrival is still pending, so the phase cannot complete early).
  static XB_INLINE void copy_in_phase(void* dst, const void* src, size_t bytes, uint64_t* w, bool bulk_ok) {
    if (bulk_ok && here(w) && bytes > 0 && bytes <= (size_t(1) << 20) - 1) {
      mbarrier::bulk_load(dst, src, uint32_t(bytes), w);
      mbarrier::expect_tx(w, uint32_t(bytes));
    } else {
      fallback::copy_in_phase(dst, src, bytes, w, false);
    }
  }
};

// A block-scope barrier with a completion function on mbarriers. Words: w[0] the mbarrier
// M that counts arrivals and tx, w[1] the mbarrier P that publishes phases (count 1),
// w[2] the number of completion steps claimed so far (C, low half) and the expected count
// of later phases (E, high half, lowered by arrive_and_drop).
//
// - M expects the init count plus one: the extra arrival is the completion step's, given
//   for phase k+1 only after phase k's completion function ran. So M is at most one phase
//   ahead of C, and test_wait.parity(M, C & 1) says exactly "phase C is complete".
// - Every operation that can complete a phase (arrive, arrive_and_drop, arrive_tx,
//   expect_tx, complete_tx, and the completion step's own arrival) is made by a thread,
//   which then settles: if phase C is complete, it claims C with one compare-and-swap
//   (exactly one thread wins), runs the completion function, arrives on P (publish) and
//   gives M the next phase's extra arrival, and repeats, since that arrival can complete the
//   next phase. The completing operation's thread always settles, so no phase is left
//   unfinished; a memcpy_async_tx is a copy by the calling thread for the same reason (the
//   copy engine would complete the phase with nobody there to run the function).
// - Once everyone has dropped out (E = 0), the last phase's step gives no extra arrival:
//   M would otherwise complete phase after phase on that arrival alone. Each drop lowers E
//   before its mbarrier arrive_drop, so the claimant of the phase it completes sees E = 0.
// - Waiters wait on P, so they return only after the completion function. Ordering: the
//   arrivals release into M, the claimant's test_wait acquires them, its arrive on P
//   releases the function's writes, the waiter's try_wait on P acquires them; all of it is
//   mbarrier synchronization, which compute-sanitizer's racecheck models.
template <class F>
struct mbarrier_completion_engine {
  using fallback = protocol_engine<thread_scope_block>;
  static constexpr bool native = true;
  static XB_INLINE bool here(const uint64_t* w) { return __isShared(w); }
  static XB_INLINE uint64_t* published(uint64_t* w) { return w + 1; }
  static XB_INLINE const uint64_t* published(const uint64_t* w) { return w + 1; }
  static XB_INLINE uint32_t* claimed(uint64_t* w) { return reinterpret_cast<uint32_t*>(w + 2); }
  static XB_INLINE uint32_t* expected(uint64_t* w) { return reinterpret_cast<uint32_t*>(w + 2) + 1; }

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected_count, int64_t limit) {
    if (!here(w)) return fallback::init(w, expected_count, limit);
    mbarrier::init(w, uint32_t(expected_count) + 1);
    mbarrier::init(published(w), 1);
    *claimed(w) = 0;
    *expected(w) = uint32_t(expected_count);
    (void)mbarrier::arrive(w, 1);  // phase 0's completion-step arrival
    mbarrier::fence_init();
  }

  static XB_DEVICE void settle(uint64_t* w, F& completion) {
    for (;;) {
      const uint32_t c = *static_cast<volatile uint32_t*>(claimed(w));
      if (!mbarrier::test_wait_parity(w, c & 1)) return;
      if (atomicCAS(claimed(w), c, c + 1) != c) return;
      completion();
      (void)mbarrier::arrive(published(w), 1);
      if (*static_cast<volatile uint32_t*>(expected(w)) == 0) return;  // everyone dropped out
      (void)mbarrier::arrive(w, 1);
    }
  }

  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& completion) {
    if (!here(w)) return fallback::arrive(w, update, completion);
    const uint64_t state = mbarrier::arrive(w, uint32_t(update));
    settle(w, completion);
    return state;
  }
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& completion) {
    if (!here(w)) return fallback::arrive_and_drop(w, completion);
    atomicSub(expected(w), 1u);
    (void)mbarrier::arrive_drop(w);
    settle(w, completion);
  }
  static XB_INLINE void wait(const uint64_t* w, uint64_t token) { wait_parity(w, parity_of_token(token)); }
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity) {
    if (!here(w)) return fallback::wait_parity(w, parity);
    while (!mbarrier::try_wait_parity(published(w), parity)) {
    }
  }
  static XB_INLINE bool test(const uint64_t* w, uint64_t token) { return test_parity(w, parity_of_token(token)); }
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity) {
    return here(w) ? mbarrier::test_wait_parity(published(w), parity) : fallback::test_parity(w, parity);
  }
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns) {
    return wait_parity_for(w, parity_of_token(token), ns);
  }
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    if (!here(w)) return fallback::wait_parity_for(w, parity, ns);
    const uint64_t start = platform::now_ns();
    for (;;) {
      const uint64_t spent = platform::now_ns() - start;
      if (spent >= ns) return mbarrier::test_wait_parity(published(w), parity);
      const uint64_t left = ns - spent;
      if (mbarrier::try_wait_parity_hint(published(w), parity, left > 0xffffffffu ? 0xffffffffu : uint32_t(left)))
        return true;
    }
  }
  static XB_INLINE uint64_t arrive_tx(uint64_t* w, ptrdiff_t arrivals, ptrdiff_t tx, F& completion) {
    if (!here(w)) return fallback::arrive_tx(w, arrivals, tx, completion);
    uint64_t state;
    if (arrivals == 1) {
      state = mbarrier::arrive_expect_tx(w, uint32_t(tx));
    } else {
      mbarrier::expect_tx(w, uint32_t(tx));
      state = mbarrier::arrive(w, uint32_t(arrivals));
    }
    settle(w, completion);
    return state;
  }
  static XB_INLINE void expect_tx(uint64_t* w, ptrdiff_t tx, F& completion) {
    if (!here(w)) return fallback::expect_tx(w, tx, completion);
    mbarrier::expect_tx(w, uint32_t(tx));
    settle(w, completion);
  }
  static XB_INLINE void complete_tx(uint64_t* w, ptrdiff_t tx, F& completion, uint32_t op) {
    if (!here(w)) return fallback::complete_tx(w, tx, completion, op);
    __threadfence_block();  // mbarrier.complete_tx is relaxed: release this thread's bytes
    mbarrier::complete_tx(w, uint32_t(tx));
    settle(w, completion);
  }
  static XB_INLINE void copy_tx(void* dst, const void* src, size_t bytes, uint64_t* w, F& completion) {
    platform::copy(dst, src, bytes);
    complete_tx(w, ptrdiff_t(bytes), completion, XB_OP_MEMCPY_ASYNC_TX);
  }
  static XB_INLINE void copy_in_phase(void* dst, const void* src, size_t bytes, uint64_t* w, bool) {
    fallback::copy_in_phase(dst, src, bytes, w, false);
  }
};
#endif

template <thread_scope Scope, class Completion>
struct engine_for {
  using type = protocol_engine<Scope>;
};
#if !XB_CHECKED
template <>
struct engine_for<thread_scope_device, empty_completion> {
  using type = direct_engine<thread_scope_device>;
};
template <>
struct engine_for<thread_scope_system, empty_completion> {
  using type = direct_engine<thread_scope_system>;
};
#endif
#if XB_NATIVE_MBARRIER
template <class Completion>
struct engine_for<thread_scope_block, Completion> {
  using type = mbarrier_completion_engine<Completion>;
};
template <>
struct engine_for<thread_scope_block, empty_completion> {
  using type = mbarrier_engine;
};
#endif

}  // namespace detail
}  // namespace xb
