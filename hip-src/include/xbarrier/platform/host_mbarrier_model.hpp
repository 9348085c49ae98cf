// xbarrier/platform/host_mbarrier_model.hpp - a software model of the PTX mbarrier for the host
// platform, with the names of platform/cuda_mbarrier.hpp, so that the checked engine's
// shadow logic (engine_sm90_checked.hpp) runs on CPU threads (XB_SHADOW_MODEL=1 in a checked
// host build: XBAR_DEVICE_DEFINES="XB_SHADOW_MODEL=1"). It follows the hardware's semantics
// (docs/mbarrier-semantics.md): a phase ends when its pending count and tx-count are both 0
// after an operation (P1, P2, P9), arrive_drop lowers the count of later phases (P16), and
// what the hardware traps on (an over-arrival, a tx-count out of range) ends the process
// here, since it means the shadow left the word's step.
//
// State: bit 63 the phase parity; bits 0..20 pending; 21..41 expected; 42..62 tx + 2^20.
//
// host.hpp includes this file at its end; either may be included first.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../config.hpp"
#include "host.hpp"

#if defined(XB_PLATFORM_HOST) && defined(XB_SHADOW_MODEL) && XB_SHADOW_MODEL
namespace xb {
namespace detail {
namespace mbarrier {

struct model_state {
  bool parity;
  int64_t pending, expected, tx;
  static model_state of(uint64_t s) {
    return {(s >> 63) != 0, int64_t(s & 0x1fffff), int64_t((s >> 21) & 0x1fffff),
            int64_t((s >> 42) & 0x1fffff) - (int64_t(1) << 20)};
  }
  uint64_t word() const {
    return (uint64_t(parity) << 63) | uint64_t(pending) | (uint64_t(expected) << 21) |
           (uint64_t(tx + (int64_t(1) << 20)) << 42);
  }
};

[[noreturn]] inline void model_trap(const char* what, const uint64_t* bar) {
  fprintf(stderr, "xbarrier shadow mbarrier model: %s on %p (the hardware would trap)\n", what,
          static_cast<const void*>(bar));
  abort();
}

// One operation, atomically: `arrivals` (and a drop), then a tx change; ends the phase
// when both counts are 0.
inline void apply(uint64_t* bar, int64_t arrivals, bool drop, int64_t tx) {
  uint64_t old = __atomic_load_n(bar, __ATOMIC_RELAXED);
  for (;;) {
    model_state s = model_state::of(old);
    s.pending -= arrivals;
    if (drop) s.expected -= 1;
    s.tx += tx;
    if (s.pending < 0 || s.expected < 0) model_trap("over-arrival", bar);
    if (s.tx > (int64_t(1) << 20) - 1 || s.tx < -((int64_t(1) << 20) - 1)) model_trap("tx-count out of range", bar);
    const bool ends = s.pending == 0 && s.tx == 0;
    if (ends) {
      s.parity = !s.parity;
      s.pending = s.expected;
    }
    if (__atomic_compare_exchange_n(bar, &old, s.word(), false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      if (ends) host_platform::notify(bar);
      return;
    }
  }
}

inline void init(uint64_t* bar, uint32_t count) {
  __atomic_store_n(bar, model_state{false, int64_t(count), int64_t(count), 0}.word(), __ATOMIC_RELAXED);
}
inline void fence_init() {}
inline uint64_t arrive(uint64_t* bar, uint32_t count) {
  apply(bar, count, false, 0);
  return 0;
}
inline uint64_t arrive_drop(uint64_t* bar) {
  apply(bar, 1, true, 0);
  return 0;
}
inline void expect_tx(uint64_t* bar, uint32_t tx) { apply(bar, 0, false, int64_t(tx)); }
inline void complete_tx(uint64_t* bar, uint32_t tx) { apply(bar, 0, false, -int64_t(tx)); }
inline bool test_wait_parity(const uint64_t* bar, uint32_t parity) {
  return ((__atomic_load_n(bar, __ATOMIC_ACQUIRE) >> 63) != 0) != (parity != 0);
}
inline bool try_wait_parity(const uint64_t* bar, uint32_t parity) { return test_wait_parity(bar, parity); }
inline bool try_wait_parity_hint(const uint64_t* bar, uint32_t parity, uint32_t) {
  return test_wait_parity(bar, parity);
}
// The copy engine's bulk copy: here the bytes land at once.
inline void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  host_platform::copy(dst, src, bytes);
  complete_tx(bar, bytes);
}

}  // namespace mbarrier
}  // namespace detail
}  // namespace xb
#endif
