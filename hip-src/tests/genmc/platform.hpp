// tests/genmc/platform.hpp - the platform layer the GenMC 0.11 checks run protocol.hpp on,
// and the few helpers every check shares (tools/genmc-check.sh runs them).
//
// Each primitive has exactly the memory order the protocol asks for, nothing stronger, so
// GenMC explores every execution RC11 (or IMM) allows for those orders. Polls are relaxed
// loads and after_poll is one acquire fence, as on AMDGPU: the weaker of the two polling
// schemes of the platform layers. GenMC has one memory scope: mem_scope is ignored.
//
// Loops. wait_backoff and relax do nothing, so every wait is a side-effect-free
// `do poll while (!done)` loop, which GenMC turns into an await; a wait that can never end
// is a liveness violation under --check-liveness. Two loops must not be taken for such
// spins, because their next iteration differs from the last one (GenMC's liveness check
// would report them as never ending): the compare-and-swap loop of tx_update (a failed CAS
// hands over the value it found) and its retry after a claimed word (a wait for the
// publish, then another try). So backoff (after a failed CAS) and after_poll (a finished
// wait) count, in plain memory only the calling thread touches. The clock is a per-thread
// counter of its own reads, so try_wait_for polls a bounded number of times.
#pragma once
#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

// Release builds unless the script asks for checked ones (config.hpp would follow NDEBUG,
// and assert() must stay on).
#ifndef XB_CHECKED
#define XB_CHECKED 0
#endif

#include "xbarrier/abi.h"
#include "xbarrier/lane_group.hpp"
#include "xbarrier/scope.hpp"

namespace xb {
namespace detail {

inline thread_local uint64_t genmc_clock;
inline thread_local uint32_t genmc_wave_extra_lanes;  // > 0: this thread stands for a wave of 1 + that many lanes

// A wave of `lanes` lanes that this one thread stands for: it leads, and there is nobody
// else to broadcast to or gather from.
struct genmc_wave {
  uint32_t lanes;
  XB_INLINE bool agree(const void*, uint64_t) const { return true; }
  XB_INLINE uint32_t size() const { return lanes; }
  XB_INLINE bool leads() const { return true; }
  XB_INLINE uint64_t broadcast(uint64_t v) const { return v; }
  XB_INLINE constexpr bool acquires_as_one() const { return true; }
  XB_INLINE void gather() const {}
  XB_INLINE uint64_t* solo(uint64_t* w) const { return w; }
};
inline thread_local uint64_t* genmc_waits;  // this thread's slot (gm::run_threads sets it)

struct genmc_platform {
  static constexpr const char* name = "genmc";

  template <mem_scope S>
  static XB_INLINE uint64_t load(const uint64_t* w, mem_order o) {
    return __atomic_load_n(w, static_cast<int>(o));
  }
  template <mem_scope S>
  static XB_INLINE void store(uint64_t* w, uint64_t v, mem_order o) {
    __atomic_store_n(w, v, static_cast<int>(o));
  }
  template <mem_scope S>
  static XB_INLINE uint64_t fetch_add(uint64_t* w, uint64_t v, mem_order o) {
    return __atomic_fetch_add(w, v, static_cast<int>(o));
  }
  // Failure order relaxed: the protocol asks nothing of a failed exchange.
  template <mem_scope S>
  static XB_INLINE bool compare_exchange(uint64_t* w, uint64_t& expected, uint64_t desired, mem_order o) {
    return __atomic_compare_exchange_n(w, &expected, desired, false, static_cast<int>(o), __ATOMIC_RELAXED);
  }
  template <mem_scope S>
  static XB_INLINE uint64_t poll(const uint64_t* w) {
    return __atomic_load_n(w, __ATOMIC_RELAXED);
  }
  template <mem_scope S>
  static XB_INLINE void after_poll() {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (genmc_waits) ++*genmc_waits;
  }
  static XB_INLINE void fence(mem_scope, mem_order o) { __atomic_thread_fence(static_cast<int>(o)); }
  // As AMDGPU: a completer acquires by a fence (the weaker form), unless a check is built
  // with -DGM_ACQUIRING_RMW=1 (CUDA's and the host's form: acq_rel RMWs).
  template <mem_scope S>
  static constexpr bool acquiring_rmw_is_cheap() {
#ifdef GM_ACQUIRING_RMW
    return true;
#else
    return false;
#endif
  }

  static XB_INLINE uint64_t now_ns() { return genmc_clock++; }
  // No time bound on checked waits: GenMC's liveness check finds the waits that never end.
  static XB_INLINE uint64_t wait_timeout_ns() { return 0; }
  static XB_INLINE void backoff(uint32_t&) {  // after a failed compare-and-swap
    if (genmc_waits) ++*genmc_waits;
  }
  static XB_INLINE void wait_backoff(uint32_t&) {}
  static XB_INLINE void relax() {}
  static XB_INLINE void notify(uint64_t*) {}
  // A thread arrives alone, or as a whole wave of 1 + genmc_wave_extra_lanes lanes (a group
  // whose leader is this thread, lane_group.hpp) where a check sets that.
  static XB_INLINE genmc_wave lanes_here() { return genmc_wave{1 + genmc_wave_extra_lanes}; }
  static XB_INLINE bool is_shared(const void*) { return true; }
  static XB_INLINE void copy(void* dst, const void* src, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) static_cast<char*>(dst)[i] = static_cast<const char*>(src)[i];
  }
  // Every fault is a failed check: the checks make no misuse.
  [[noreturn]] static XB_INLINE void fault(const xb_fault_record& r) {
    assert(r.kind == XB_FAULT_NONE);
    __builtin_unreachable();
  }
};

}  // namespace detail
}  // namespace xb

#include "xbarrier/protocol.hpp"

namespace gm {

using P = xb::detail::genmc_platform;
using block = xb::detail::protocol<P, xb::thread_scope_block>;
using device = xb::detail::protocol<P, xb::thread_scope_device>;
using direct = xb::detail::direct_protocol<P, xb::thread_scope_device>;

// A direct layout behind the claimed protocol's interface, so that the checks without a
// completion function run on it too (-DGM_PROTO=gm::direct_block or gm::direct_device):
// the completion function is ignored, the waits and tests are the claimed protocol's (R is
// bit 63 in every layout), and W decodes the direct word for final_state.
template <xb::thread_scope S>
struct direct_as_proto {
  using D = xb::detail::direct_protocol<P, S>;
  using claimed = xb::detail::protocol<P, S>;
  struct W {
    static bool parity(uint64_t s) { return D::parity(s); }
    static int64_t expected(uint64_t s) { return int64_t(D::expected_of(s)); }
    static int64_t tx(uint64_t s) { return D::tx(s); }
    static int64_t pending(uint64_t s) { return D::pending(s); }
  };
  static void init(uint64_t* w, ptrdiff_t n) { D::init(w, n); }
  template <class C>
  static void arrive_and_wait(uint64_t* w, C&) {
    D::arrive_and_wait(w);
  }
  template <class C>
  static bool arrive(uint64_t* w, ptrdiff_t update, C&, bool drop) {
    return D::arrive(w, update, drop);
  }
  template <class C>
  static bool tx_update(uint64_t* w, uint32_t arrivals, int64_t tx, C&, uint32_t) {
    return D::tx_update(w, arrivals, tx);
  }
  static void wait_parity(const uint64_t* w, bool parity) { claimed::wait_parity(w, parity); }
  static bool test_parity(const uint64_t* w, bool parity) { return claimed::test_parity(w, parity); }
  static bool wait_parity_for(const uint64_t* w, bool parity, uint64_t ns) {
    return claimed::wait_parity_for(w, parity, ns);
  }
};
using direct_block = direct_as_proto<xb::thread_scope_block>;
using direct_device = direct_as_proto<xb::thread_scope_device>;
// The layout a check runs on: the claimed block layout, or with -DGM_PROTO=gm::device the
// claimed wide layout of device and system scope (31-bit counts, no tx), or a direct layout
// (gm::direct_block, gm::direct_device) for the checks without a completion function.
#ifndef GM_PROTO
#define GM_PROTO gm::block
#endif
using proto = GM_PROTO;

struct no_completion {
  void operator()() {}
};

// The barrier word and its decoded fields, for main's final checks (after every join).
template <class Proto>
struct final_state {
  uint64_t s;
  explicit final_state(const uint64_t* w) : s(__atomic_load_n(w, __ATOMIC_RELAXED)) {}
  bool parity() const { return Proto::W::parity(s); }
  int64_t pending() const { return Proto::W::pending(s); }
  int64_t expected() const { return Proto::W::expected(s); }
  int64_t tx() const { return Proto::W::tx(s); }
};

// Awaits an atomic flag another thread sets (a loop GenMC turns into an await).
inline void await_at_least(const int* flag, int v) {
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < v) {
  }
}

// Runs f(0) .. f(N-1) on N threads (at most 4) and joins them.
struct thread_start {
  void* (*f)(void*);
  long index;
};
inline uint64_t waits[4];
inline void* start_thread(void* arg) {
  const thread_start* t = static_cast<const thread_start*>(arg);
  xb::detail::genmc_waits = &waits[t->index];
  return t->f(reinterpret_cast<void*>(t->index));
}
template <int N>
inline void run_threads(void* (*f)(void*)) {
  static_assert(N <= 4, "one wait counter per thread");
  pthread_t t[N];
  thread_start s[N];
  for (long i = 0; i < N; ++i) {
    s[i] = {f, i};
    pthread_create(&t[i], nullptr, start_thread, &s[i]);
  }
  for (int i = 0; i < N; ++i) pthread_join(t[i], nullptr);
}

}  // namespace gm
