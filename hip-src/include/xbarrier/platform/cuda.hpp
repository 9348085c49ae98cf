// xbarrier/platform/cuda.hpp - the CUDA platform layer: the portable protocol's primitives
// on NVIDIA GPUs. Running the protocol on it is the "emulated" variant (each lane arriving
// alone) and, with XB_GROUP_LANES, the "grouped" one: the protocol AMD GPUs run, with their
// lane groups, exercised by real GPU concurrency on sm_80/sm_90. The native sm_90 engines
// (engine_sm90_*.hpp) add the mbarrier instructions of cuda_mbarrier.hpp.
//
// Only the primitives are CUDA's: scoped atomics (libcu++ atomic_ref, which lowers to
// atom/ld/st with .cta/.gpu/.sys), back-off (__nanosleep), the clock (%globaltimer),
// address-space tests (__isShared) and fault reporting (a module global the host reads).
// nvcc supplies the kernel vocabulary (threadIdx, __syncthreads, __shared__, ...) itself.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <cuda/atomic>

#include "../abi.h"
#include "../lane_group.hpp"
#include "../scope.hpp"
#include "cuda_mbarrier.hpp"
#include "wide_copy.hpp"

// The first fault of a launch; backend-cuda reads it (cuModuleGetGlobal) after synchronize
// and clears it. `kind` doubles as the abort flag that checked waits poll.
extern "C" {
__device__ xb_fault_record xb_fault_record_slot;
}

namespace xb {

// The launch's dynamic shared memory, 128-byte aligned as the host backend's arena: after a
// kernel's static shared variables the base is otherwise only 16-byte aligned, and the copy
// engine writes stages that straddle 128-byte lines measurably slower (8 % on the H200 at
// 16 bytes past a line).
extern __shared__ __attribute__((aligned(128))) unsigned char xb_dynamic_shared_memory[];

namespace detail {

template <mem_scope S>
struct cuda_scope;
template <>
struct cuda_scope<mem_scope::block> {
  static constexpr cuda::thread_scope value = cuda::thread_scope_block;
};
template <>
struct cuda_scope<mem_scope::device> {
  static constexpr cuda::thread_scope value = cuda::thread_scope_device;
};
template <>
struct cuda_scope<mem_scope::system> {
  static constexpr cuda::thread_scope value = cuda::thread_scope_system;
};

XB_INLINE constexpr cuda::std::memory_order cuda_order(mem_order o) {
  return o == mem_order::relaxed   ? cuda::std::memory_order_relaxed
       : o == mem_order::acquire   ? cuda::std::memory_order_acquire
       : o == mem_order::release   ? cuda::std::memory_order_release
       : o == mem_order::acq_rel   ? cuda::std::memory_order_acq_rel
                                   : cuda::std::memory_order_seq_cst;
}

struct cuda_platform {
  template <mem_scope S>
  using ref = cuda::atomic_ref<uint64_t, cuda_scope<S>::value>;

  // A block-scope word in shared memory takes shared-space loads, stores and CAS
  // (ATOMS.CAS.64 is one instruction; a generic CAS carries a shared-memory fallback path).
  // The test folds away for a __shared__ barrier.
  template <mem_scope S>
  static XB_INLINE bool in_shared(const uint64_t* w) {
    return S == mem_scope::block && __isShared(w);
  }
  static XB_INLINE uint32_t shared_address(const uint64_t* w) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(w));
  }

  template <mem_scope S>
  static XB_INLINE uint64_t load(const uint64_t* w, mem_order o) {
    if (in_shared<S>(w) && (o == mem_order::relaxed || o == mem_order::acquire)) {
      uint64_t v;
      if (o == mem_order::relaxed)
        asm volatile("ld.relaxed.cta.shared.u64 %0, [%1];" : "=l"(v) : "r"(shared_address(w)) : "memory");
      else
        asm volatile("ld.acquire.cta.shared.u64 %0, [%1];" : "=l"(v) : "r"(shared_address(w)) : "memory");
      return v;
    }
    return ref<S>(*const_cast<uint64_t*>(w)).load(cuda_order(o));
  }
  template <mem_scope S>
  static XB_INLINE void store(uint64_t* w, uint64_t v, mem_order o) {
    if (in_shared<S>(w) && o == mem_order::relaxed) {
      asm volatile("st.relaxed.cta.shared.u64 [%0], %1;" ::"r"(shared_address(w)), "l"(v) : "memory");
      return;
    }
    ref<S>(*w).store(v, cuda_order(o));
  }
  // fetch_add goes through the generic address even for a shared word: the shared-space
  // instruction has no 64-bit add on sm_90 (ATOMS.CAST.SPIN.64 loop), while the generic
  // ATOM.E.ADD.64 adds a shared word in one instruction, with the CAS loop kept only as
  // nvcc's fallback. On the H200 the shared-space form made the emulated round trip 1.25x
  // slower at 128 threads and 2.7x slower at 1024.
  template <mem_scope S>
  static XB_INLINE uint64_t fetch_add(uint64_t* w, uint64_t v, mem_order o) {
    return ref<S>(*w).fetch_add(v, cuda_order(o));
  }
  template <mem_scope S>
  static XB_INLINE bool compare_exchange(uint64_t* w, uint64_t& expected, uint64_t desired, mem_order o) {
    if (in_shared<S>(w) && (o == mem_order::acq_rel || o == mem_order::relaxed)) {
      uint64_t old;
      if (o == mem_order::relaxed)
        asm volatile("atom.relaxed.cta.shared.cas.b64 %0, [%1], %2, %3;"
                     : "=l"(old)
                     : "r"(shared_address(w)), "l"(expected), "l"(desired)
                     : "memory");
      else
        asm volatile("atom.acq_rel.cta.shared.cas.b64 %0, [%1], %2, %3;"
                     : "=l"(old)
                     : "r"(shared_address(w)), "l"(expected), "l"(desired)
                     : "memory");
      const bool swapped = old == expected;
      expected = old;
      return swapped;
    }
    return ref<S>(*w).compare_exchange_strong(expected, desired, cuda_order(o), cuda::std::memory_order_relaxed);
  }

  // Polls are acquire loads and need no fence afterwards: on sm_90 an acquire load is a
  // plain LDS (shared, CTA scope) or a strong load plus CCTL.IVALL (GPU scope), whereas the
  // acquire fence after a relaxed poll is MEMBAR.ALL.{CTA,GPU}.
  template <mem_scope S>
  static XB_INLINE uint64_t poll(const uint64_t* w) {
    return load<S>(w, mem_order::acquire);
  }
  template <mem_scope S>
  static XB_INLINE void after_poll() {}
  // An acq_rel RMW is the cheaper acquire for a completer: at CTA scope ptxas emits the same
  // MEMBAR.ALL.CTA and atomic for acq_rel as for release, at GPU and system scope it adds a
  // CCTL.IVALL, where an acquire fence on the completer's path would be a second MEMBAR.
  template <mem_scope S>
  static constexpr bool acquiring_rmw_is_cheap() {
    return true;
  }

  // Arrivals go lane by lane unless XB_GROUP_LANES (config.hpp): each lane's fetch_add on a
  // word the warp shares is combined by ptxas into one atomic per warp, with each lane's
  // result rebuilt from it, and no meeting of the lanes. Grouped (struct warp below:
  // __activemask, __match_all_sync, one leader's fetch_add) a round trip cost ~370 cycles a
  // phase more on sm_90. One CAS per whole warp was 2-4.5x slower still, and CCCL's sm_70
  // scheme (__match_any_sync over __activemask(), lanes of differing barriers grouped apart)
  // deadlocked with 29 lanes never arriving: the groups here are all-or-none
  // (__match_all_sync), every lane of one reaches its collectives, and lanes that disagree
  // arrive alone.

  static XB_INLINE void fence(mem_scope s, mem_order o) {
    const cuda::std::memory_order order = cuda_order(o);
    if (s == mem_scope::block) cuda::atomic_thread_fence(order, cuda::thread_scope_block);
    else if (s == mem_scope::device) cuda::atomic_thread_fence(order, cuda::thread_scope_device);
    else cuda::atomic_thread_fence(order, cuda::thread_scope_system);
  }
  // Orders generic-proxy writes to shared memory before async-proxy reads of it (bulk
  // copies). Only sm_90 has an async proxy; elsewhere a block-scope fence suffices.
  static XB_INLINE void fence_proxy_async() {
#if XB_MBARRIER_ISA
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
    fence(mem_scope::block, mem_order::acq_rel);
#endif
  }

  static XB_INLINE uint64_t now_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  static XB_INLINE uint64_t wait_timeout_ns() { return XB_DEFAULT_WAIT_TIMEOUT_NS; }

  static XB_INLINE bool aborted() {
    return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(xb_fault_record_slot.kind).load(
               cuda::std::memory_order_relaxed) != 0;
  }

  // Spin 64 polls, then sleep 32 ns doubling to 256 ns; checked builds leave when the launch
  // faulted. A phase usually completes within a few hundred cycles of the first poll, and
  // sleeping up to 1 us instead cost ~2000 cycles per round trip on the H200; polls of one
  // word are cheap next to that. Every wait and compare-and-swap retry uses it, but the
  // waits of sanitizer builds (wait_backoff).
  static XB_INLINE void backoff(uint32_t& iteration) { sleep_schedule<64, 4, 3>(iteration); }
  // Every poll of a wait (the protocol's, the checked engine's shadow waits): the short
  // back-off, except in sanitizer builds (XB_SANITIZER, config.hpp), which sleep 32 ns
  // doubling per poll after 8 polls, up to 1 ms, so the extra latency stays below the time
  // already waited (engine_sm90_checked.hpp, 6.). Compare-and-swap retries keep the short
  // back-off there too: 1024 contending threads that each slept up to 1 ms took minutes per
  // case.
  static XB_INLINE void wait_backoff(uint32_t& iteration) {
    if (XB_CHECKED && XB_SANITIZER) sleep_schedule<8, 1, 15>(iteration);
    else backoff(iteration);
  }
  // Both back-offs: `spins` polls, then 32 ns doubling every `per_doubling` polls up to
  // 32 ns << `top`; checked builds leave a faulted launch.
  template <uint32_t spins, uint32_t per_doubling, uint32_t top>
  static XB_INLINE void sleep_schedule(uint32_t& iteration) {
    if (XB_CHECKED && aborted()) asm volatile("exit;");
    if (iteration >= spins) {
      const uint32_t step = (iteration - spins) / per_doubling;
      __nanosleep(32u << (step < top ? step : top));
    }
    ++iteration;
  }
  // A non-blocking probe failed (try_wait). Checked builds leave a faulted launch, as the
  // waits do, or a caller's loop on try_wait would spin past the fault forever. Sanitizer
  // builds also sleep 0-1 ms, spread by time and thread, so that such loops are seldom all
  // awake at once (engine_sm90_checked.hpp, 6.; a caller's loop keeps no back-off state).
  static XB_INLINE void relax() {
    if (XB_CHECKED) {
      if (aborted()) asm volatile("exit;");
      if (XB_SANITIZER) {
        const uint32_t h = (uint32_t(now_ns() >> 10) ^ (threadIdx.x * 40503u)) * 2654435761u;
        __nanosleep((h >> 22) * 1000u);
      }
    }
  }
  static XB_INLINE void notify(uint64_t*) {}

  // Lane groups (lane_group.hpp; XB_GROUP_LANES builds): the lanes of this warp that
  // reached the call together (__activemask), when they all pass the same barrier and update
  // (__match_all_sync); else each lane alone. Every lane of the mask reaches the group's shuffles and __syncwarp,
  // because nothing between the call and the broadcast of the completion step's outcome
  // waits (protocol.hpp 5.). After that broadcast the lanes leave the step together: without
  // such a meeting point the round trip on the H200 was 1.7x slower at 128 threads (the
  // waiting lanes ran ahead and the one lane with the step waited for the warp to switch
  // paths).
  // Lanes of one warp; the lowest leads. Shuffles carry values, not memory order, so both
  // gather() and broadcast() begin with a __syncwarp: the first orders the lanes' earlier
  // accesses before the leader's release, the second the leader's RMW before the lanes'
  // later polls (which then read the word no older than the leader found it). Every lane
  // acquires by its own poll.
  struct warp {
    uint32_t lanes;
    XB_INLINE bool agree(const void* barrier, uint64_t b) const {
      int same_a = 0, same_b = 0;
      (void)__match_all_sync(lanes, reinterpret_cast<unsigned long long>(barrier), &same_a);
      (void)__match_all_sync(lanes, static_cast<unsigned long long>(b), &same_b);
      return same_a && same_b;
    }
    XB_INLINE uint32_t leader() const { return uint32_t(__ffs(int(lanes)) - 1); }
    XB_INLINE uint32_t size() const { return uint32_t(__popc(lanes)); }
    XB_INLINE bool leads() const {
      uint32_t below;
      asm("mov.u32 %0, %%lanemask_lt;" : "=r"(below));
      return (lanes & below) == 0;
    }
    XB_INLINE uint64_t broadcast(uint64_t v) const {
      __syncwarp(lanes);
      return __shfl_sync(lanes, static_cast<unsigned long long>(v), int(leader()));
    }
    XB_INLINE constexpr bool acquires_as_one() const { return false; }
    XB_INLINE void gather() const { __syncwarp(lanes); }
    // ptxas combines a warp's atomics on one address into one lane's, with an election and
    // shuffles of its own, even where only the leader runs the atomic: an offset that is
    // zero on the leader but per-lane to ptxas (the group's lanes below this one) leaves the
    // leader's atomic alone.
    XB_INLINE uint64_t* solo(uint64_t* w) const {
      uint32_t below;  // volatile: not merged with leads()', whose test would fold it to 0
      asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(below));
      return reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(w) + (below & lanes));
    }
  };
#if XB_GROUP_LANES
  static XB_INLINE warp lanes_here() { return warp{__activemask()}; }
#else
  static XB_INLINE single_lane lanes_here() { return single_lane(); }
#endif

  static XB_INLINE bool is_shared(const void* p) { return __isShared(p); }
  // The same, never folded by the compiler: nvcc 13.0 folded __isShared to false at one
  // call site of eight on one __shared__ barrier, where the checked engine must not lose an
  // operation's mirror.
  static XB_INLINE bool is_shared_at_run_time(const void* p) {
    uint32_t shared;
    asm volatile("{ .reg .pred p; isspacep.shared p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(shared) : "l"(p));
    return shared != 0;
  }
  static XB_INLINE bool is_global(const void* p) { return __isGlobal(p); }
  // This thread's earlier writes, ordered before its next relaxed operation for the block.
  static XB_INLINE void release_block() { __threadfence_block(); }

  static XB_INLINE void copy(void* dst, const void* src, size_t bytes) { wide_copy<uint4>(dst, src, bytes); }

  static XB_INLINE unsigned char* dynamic_shared() { return xb_dynamic_shared_memory; }

  // A completion function is copied into the barrier bytewise (device code has no
  // placement new), so it must be trivially copyable, as captureless and pointer-capturing
  // lambdas are.
  template <class F>
  static XB_INLINE void construct_copy(F& slot, const F& f) {
    static_assert(__is_trivially_copyable(F), "xb::barrier: a completion function must be trivially copyable on GPU targets");
    __builtin_memcpy(static_cast<void*>(&slot), static_cast<const void*>(&f), sizeof(F));
  }

  // Records the first fault of the launch and ends the calling thread; checked waits of
  // the other threads see `kind` set and end too.
  [[noreturn]] static XB_INLINE void fault(xb_fault_record r) {
    r.block[0] = blockIdx.x;
    r.block[1] = blockIdx.y;
    r.block[2] = blockIdx.z;
    r.thread[0] = threadIdx.x;
    r.thread[1] = threadIdx.y;
    r.thread[2] = threadIdx.z;
    xb_fault_record* slot = &xb_fault_record_slot;
    if (atomicCAS(&slot->op, 0u, r.op) == 0) {
      const uint32_t kind = r.kind;
      r.kind = 0;
      *slot = r;  // op stays claimed (same value); publish kind last
      slot->op = r.op;
      __threadfence_system();
      atomicExch(&slot->kind, kind);
    }
    asm volatile("exit;");
    __builtin_unreachable();
  }
};

using platform = cuda_platform;

}  // namespace detail
}  // namespace xb
