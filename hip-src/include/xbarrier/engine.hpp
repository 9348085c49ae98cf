// xbarrier/engine.hpp - how each kind of barrier is lowered. xb::barrier forwards every
// operation to engine_for<Scope, Completion>:
//   protocol_engine  the portable protocol (protocol.hpp) on this target's platform layer:
//                    every barrier on AMD GPUs and the host, the emulated CUDA variant,
//                    checked builds, and barriers the hardware cannot hold.
//   mbarrier_engine  CUDA sm_90 native: a block-scope barrier without a completion function
//                    is the PTX mbarrier object itself (platform/cuda_mbarrier.hpp). One that
//                    turns out not to be in shared memory falls back to the protocol, as
//                    CCCL's does.
//   mbarrier_completion_engine
//                    CUDA sm_90 native, block scope with a completion function: two
//                    mbarriers and a control word (completion_engine.hpp).
//   direct_engine    device or system scope without a completion function, unchecked builds,
//                    every target: the direct layout (protocol.hpp), whose last arrival
//                    publishes the phase in the same atomic.
//   checked_mbarrier_engine
//                    CUDA sm_90 checked builds, block scope: the checked protocol, with
//                    shadow mbarriers that carry its synchronization for compute-sanitizer
//                    (checked_engine.hpp).
//
// Waits and tests take the completion function too: on the native completion path a
// waiter may be the one that sees a phase end (the copy engine ended it) and runs its step.
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

XB_INLINE constexpr uint64_t token_of_parity(bool parity) { return uint64_t(parity) << 63; }
XB_INLINE constexpr bool parity_of_token(uint64_t token) { return (token >> 63) != 0; }

template <thread_scope Scope>
struct protocol_engine {
  using proto = protocol<platform, Scope>;

  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t limit) { proto::init(w, expected, limit); }
  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F& completion) {
    return token_of_parity(proto::arrive(w, update, completion, false));
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F& completion) {
    (void)proto::arrive(w, 1, completion, true);
  }
  template <class F>
  static XB_INLINE void arrive_and_wait(uint64_t* w, F& completion) {
    proto::arrive_and_wait(w, completion);
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
  static XB_INLINE bool bulk_possible(void*, const void*, size_t, const uint64_t*, bool) { return false; }
};

// The direct layout for arrivals; waits are the protocol's (the phase bit is bit 63 in
// every layout). The inherited tx operations are never reached: barrier_object.hpp lets tx
// through only at block scope.
template <thread_scope Scope>
struct direct_engine : protocol_engine<Scope> {
  using direct = direct_protocol<platform, Scope>;
  static XB_INLINE void init(uint64_t* w, ptrdiff_t expected, int64_t) { direct::init(w, expected); }
  template <class F>
  static XB_INLINE uint64_t arrive(uint64_t* w, ptrdiff_t update, F&) {
    return token_of_parity(direct::arrive(w, update, false));
  }
  template <class F>
  static XB_INLINE void arrive_and_drop(uint64_t* w, F&) {
    (void)direct::arrive(w, 1, true);
  }
  template <class F>
  static XB_INLINE void arrive_and_wait(uint64_t* w, F&) {
    direct::arrive_and_wait(w);
  }
};

#if XB_NATIVE_MBARRIER
// Every function tests where the barrier lives first: for a __shared__ barrier the compiler
// folds the test away; a block-scope barrier in global memory takes the protocol.
struct mbarrier_engine {
  using fallback = protocol_engine<thread_scope_block>;
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
  template <class F>
  static XB_INLINE void arrive_and_wait(uint64_t* w, F& completion) {
    if (here(w)) wait(w, mbarrier::arrive(w, 1));
    else fallback::arrive_and_wait(w, completion);
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
  // Until the phase completes or `ns` have passed: try_wait with the time left as its
  // suspend hint (`probe(hint)`), and one last non-blocking test (`probe(0)`) at the end.
  template <class Probe>
  static XB_INLINE bool bounded(uint64_t ns, Probe probe) {
    const uint64_t start = platform::now_ns();
    for (;;) {
      const uint64_t spent = platform::now_ns() - start;
      if (spent >= ns) return probe(0u);
      const uint64_t left = ns - spent;
      if (probe(left > 0xffffffffu ? 0xffffffffu : uint32_t(left))) return true;
    }
  }
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns) {
    if (!here(w)) return fallback::wait_for(w, token, ns);
    return bounded(ns, [w, token](uint32_t hint) {
      return hint ? mbarrier::try_wait_hint(w, token, hint) : mbarrier::test_wait(w, token);
    });
  }
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    if (!here(w)) return fallback::wait_parity_for(w, parity, ns);
    return bounded(ns, [w, parity](uint32_t hint) {
      return hint ? mbarrier::try_wait_parity_hint(w, parity, hint) : mbarrier::test_wait_parity(w, parity);
    });
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
  // Whether copy_in_phase can use the copy engine: a 16-byte-aligned shape, shared <- global,
  // a barrier in shared memory, and a size the tx-count can hold.
  static XB_INLINE bool bulk_possible(void* dst, const void* src, size_t bytes, const uint64_t* w, bool aligned) {
    return aligned && bytes > 0 && bytes <= (size_t(1) << 20) - 1 && here(w) && __isShared(dst) && __isGlobal(src);
  }
  // cuda::memcpy_async on sm_90: a bulk copy whose bytes the barrier's current phase
  // expects (issued first, expected after: the tx-count may go negative meanwhile, and the
  // caller's own arrival is still pending, so the phase cannot complete early).
  static XB_INLINE void copy_in_phase(void* dst, const void* src, size_t bytes, uint64_t* w, bool bulk_ok) {
    if (bulk_possible(dst, src, bytes, w, bulk_ok)) {
      mbarrier::bulk_load(dst, src, uint32_t(bytes), w);
      mbarrier::expect_tx(w, uint32_t(bytes));
    } else {
      fallback::copy_in_phase(dst, src, bytes, w, false);
    }
  }
};

#endif

}  // namespace detail
}  // namespace xb

#include "completion_engine.hpp"
#include "checked_engine.hpp"

namespace xb {
namespace detail {

// The waits as xb::barrier calls them, with the completion function: only the native
// completion engine's waits can run a step; the others' waits ignore it.
template <class Engine>
struct waits_of {
  template <class F>
  static XB_INLINE void wait(const uint64_t* w, uint64_t token, F&) { Engine::wait(w, token); }
  template <class F>
  static XB_INLINE void wait_parity(const uint64_t* w, bool parity, F&) { Engine::wait_parity(w, parity); }
  template <class F>
  static XB_INLINE bool test(const uint64_t* w, uint64_t token, F&) { return Engine::test(w, token); }
  template <class F>
  static XB_INLINE bool test_parity(const uint64_t* w, bool parity, F&) { return Engine::test_parity(w, parity); }
  template <class F>
  static XB_INLINE bool wait_for(const uint64_t* w, uint64_t token, uint64_t ns, F&) {
    return Engine::wait_for(w, token, ns);
  }
  template <class F>
  static XB_INLINE bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns, F&) {
    return Engine::wait_parity_for(w, parity, ns);
  }
};

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
template <>
struct engine_for<thread_scope_block, empty_completion> {
  using type = mbarrier_engine;
};
template <class Completion>
struct engine_for<thread_scope_block, Completion> {
  using type = mbarrier_completion_engine;
};
template <>
struct waits_of<mbarrier_completion_engine> : mbarrier_completion_engine {};
#endif
#if XB_CHECKED_MBARRIER
template <>
struct engine_for<thread_scope_block, empty_completion> {
  using type = checked_mbarrier_engine<false>;
};
template <class Completion>
struct engine_for<thread_scope_block, Completion> {
  using type = checked_mbarrier_engine<true>;
};
#endif

}  // namespace detail
}  // namespace xb
