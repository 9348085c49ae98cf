// xbarrier/engine_sm90_mbarrier.hpp - the native engine of CUDA sm_90 release builds
// (XB_NATIVE_MBARRIER): a block-scope barrier without a completion function is the PTX
// mbarrier object itself (platform/cuda_mbarrier.hpp), and the copies bound to it are bulk
// copies of the copy engine. One that turns out not to be in shared memory falls back to the
// protocol, as CCCL's does. Empty on every other target and build.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "engine_portable.hpp"
#include "platform.hpp"

#if XB_NATIVE_MBARRIER
namespace xb {
namespace detail {

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

// xb::device::bulk_store and its group functions: bulk copies shared -> global, tracked by
// the issuing thread's bulk async-groups.
struct mbarrier_bulk_store {
  static XB_INLINE void store(void* dst, const void* src, size_t bytes) {
    mbarrier::bulk_store(dst, src, uint32_t(bytes));
  }
  static XB_INLINE void commit() { mbarrier::bulk_commit(); }
  template <int N>
  static XB_INLINE void wait_read() {
    mbarrier::bulk_wait_read<N>();
  }
  template <int N>
  static XB_INLINE void wait() {
    mbarrier::bulk_wait<N>();
  }
};

}  // namespace detail
}  // namespace xb
#endif
