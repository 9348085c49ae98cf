// tests/genmc/system_split.hpp - the split form of barrier<thread_scope_system>
// (xbarrier/engine_system.hpp) on the GenMC platform layer, for the system_split* checks.
//
// engine_system.hpp is written against xb::detail::platform, which xbarrier/platform.hpp
// takes from the target config.hpp picks (the host here). So this header defines
// xb::detail::platform as the GenMC layer (platform.hpp of this directory), with the three
// primitives the interface check asks for that the protocol's checks never call, and hides
// the host target while engine_system.hpp includes xbarrier/platform.hpp: config.hpp has
// been included already (#pragma once), so that include picks no target and only checks the
// interface of the platform defined here.
//
// The objects are set up as xb_system_split_init does (hip-src/host/system_barrier.cpp), on
// plain globals: side A (the host's) and side B (a device's), each object of four words,
// cross-linked through the two slots where the sides publish their phase counts. The checks
// call them through system_engine, as xb::barrier does, with a Base (the shared form) that
// must never run.
#pragma once
#include "platform.hpp"
#include "xbarrier/config.hpp"

namespace xb {
namespace detail {
struct genmc_system_platform : genmc_platform {
  static XB_INLINE void fence_proxy_async() { __atomic_thread_fence(__ATOMIC_ACQ_REL); }
  static XB_INLINE unsigned char* dynamic_shared() { return nullptr; }
  template <class F>
  static XB_INLINE void construct_copy(F& slot, const F& f) {
    slot = f;
  }
};
using platform = genmc_system_platform;
}  // namespace detail
}  // namespace xb

#ifdef XB_PLATFORM_HOST
#undef XB_PLATFORM_HOST
#include "xbarrier/engine_system.hpp"
#define XB_PLATFORM_HOST 1
#else
#include "xbarrier/engine_system.hpp"
#endif

namespace gm {

// The shared form: every split object has its fourth word set, so none of this runs.
struct no_shared_form {
  template <class F>
  static uint64_t arrive(uint64_t*, ptrdiff_t, F&) {
    assert(!"shared form");
    return 0;
  }
  template <class F>
  static void arrive_and_drop(uint64_t*, F&) {
    assert(!"shared form");
  }
  template <class F>
  static void arrive_and_wait(uint64_t*, F&) {
    assert(!"shared form");
  }
  static void wait(const uint64_t*, uint64_t) { assert(!"shared form"); }
  static void wait_parity(const uint64_t*, bool) { assert(!"shared form"); }
  static bool test(const uint64_t*, uint64_t) {
    assert(!"shared form");
    return false;
  }
  static bool test_parity(const uint64_t*, bool) {
    assert(!"shared form");
    return false;
  }
  static bool wait_for(const uint64_t*, uint64_t, uint64_t) {
    assert(!"shared form");
    return false;
  }
  static bool wait_parity_for(const uint64_t*, bool, uint64_t) {
    assert(!"shared form");
    return false;
  }
};
using sys = xb::detail::system_engine<no_shared_form>;
using split = xb::detail::system_split;

// The two sides' objects and slots (zero-filled globals, as xb_system_split_init asks).
inline uint64_t side_a[4], side_b[4];
inline uint64_t slot_a, slot_b;  // where A and B publish their counts

// Cross-links the sides: A expects `a` arrivals per phase, B `b`.
inline void split_init(ptrdiff_t a, ptrdiff_t b) {
  split::init_side(side_a, a, &slot_a, &slot_b);
  split::init_side(side_b, b, &slot_b, &slot_a);
}

// The completion step a side's share runs (the caller's part of publish_step): counts the
// share's phases in plain memory, which only that share's completers touch, one at a time.
struct share_steps {
  int n = 0;
  void operator()() { ++n; }
};

// The phase a token names, and its parity bit (bit 63, as every engine's token).
inline uint64_t phase_of(uint64_t token) { return split::phase_of(token); }
inline bool parity_of(uint64_t token) { return (token >> 63) != 0; }

}  // namespace gm
