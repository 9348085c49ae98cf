// xbarrier/engine_portable.hpp - the engines that run on every target, on the platform
// layer's atomics (engine.hpp says which barrier takes which engine):
//   protocol_engine  the portable protocol (protocol.hpp): every barrier on AMD GPUs and the
//                    host, the emulated CUDA variant, checked builds, and the barriers the
//                    sm_90 engines cannot hold (their fallback).
//   direct_engine    barriers without a completion function in unchecked builds (but
//                    sm_90's native block barriers): the direct layouts (protocol.hpp),
//                    whose completing atomic publishes the phase itself.
//
// An engine is a set of static functions on the barrier's words (init, arrive,
// arrive_and_drop, arrive_and_wait, the waits and tests, the tx operations, the copies).
// Tokens are 64-bit states whose bit 63 is the parity of the phase the arrival was counted
// in: the mbarrier state as the hardware returns it, or the parity alone from the protocol.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "platform.hpp"
#include "protocol.hpp"

namespace xb {
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

// The direct layouts (protocol.hpp); waits and tests are the protocol's (the phase bit is
// bit 63 in every layout). The tx operations exist for block and thread scope only (the tx
// functions compile only for block-scope barriers, barrier_object.hpp).
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
  template <class F>
  static XB_INLINE uint64_t arrive_tx(uint64_t* w, ptrdiff_t arrivals, ptrdiff_t tx, F&) {
    return token_of_parity(direct::tx_update(w, uint32_t(arrivals), tx));
  }
  template <class F>
  static XB_INLINE void expect_tx(uint64_t* w, ptrdiff_t tx, F&) {
    (void)direct::tx_update(w, 0, tx);
  }
  template <class F>
  static XB_INLINE void complete_tx(uint64_t* w, ptrdiff_t tx, F&, uint32_t) {
    (void)direct::tx_update(w, 0, -int64_t(tx));
  }
  template <class F>
  static XB_INLINE void copy_tx(void* dst, const void* src, size_t bytes, uint64_t* w, F& completion) {
    platform::copy(dst, src, bytes);
    complete_tx(w, ptrdiff_t(bytes), completion, XB_OP_MEMCPY_ASYNC_TX);
  }
};

// xb::device::bulk_store and its group functions where no copy engine runs them: the
// calling thread copies before the call returns, so there is nothing to commit or wait for.
struct synchronous_bulk_store {
  static XB_INLINE void store(void* dst, const void* src, size_t bytes) { platform::copy(dst, src, bytes); }
  static XB_INLINE void commit() {}
  template <int N>
  static XB_INLINE void wait_read() {}
  template <int N>
  static XB_INLINE void wait() {}
};

}  // namespace detail
}  // namespace xb
