// xbarrier/platform/amdgcn.hpp - the AMDGPU platform layer: the portable protocol's
// primitives on gfx9 (CDNA, wave64), gfx11 and gfx12 (RDNA, wave32), with clang builtins
// only, so no ROCm headers or device libraries are needed.
//
// The amdgcn layer and the CUDA layer (platform/cuda.hpp, the "emulated" and "grouped" CUDA
// variants) differ only in these primitives; the protocol itself (protocol.hpp) is one code
// for both, which is how the H200 runs the protocol AMD GPUs run (the grouped variant with
// lane groups as AMD waves form them).
//
// - Scoped atomics: __hip_atomic_* with workgroup / agent / system scope. A block-scope word
//   in LDS becomes ds_add_rtn_u64 / ds_cmpst_rtn_b64 (AMD has a native 64-bit LDS add).
// - Lane groups: a wave whose lanes make the same barrier call arrives by one lane's atomic,
//   and decides on its result in scalar registers (lane_group.hpp, protocol.hpp 6.).
// - Fences: __builtin_amdgcn_fence(order, "workgroup" | "agent" | ""), which the backend
//   lowers per target (buffer_wbl2/buffer_inv on gfx9, buffer_gl*_inv on gfx11,
//   global_wb/global_inv with scopes on gfx12).
// - Back-off: s_sleep; clock: the constant-rate real-time counter (s_memrealtime /
//   s_sendmsg_rtn) at the rate the runtime reports for the device (amdgcn_clock.hpp).
// - Kernels: the CUDA vocabulary (__global__, __shared__, threadIdx, __syncthreads, ...) from
//   clang builtins where no ROCm header (hip_runtime.h) was included first; theirs stay.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "../abi.h"
#include "../lane_group.hpp"
#include "../scope.hpp"
#include "amdgcn_clock.hpp"
#include "wide_copy.hpp"

// The attributes hip_runtime.h would define.
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __host__
#define __host__ __attribute__((host))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif

// The first fault of a launch; backend-hip reads it (hipModuleGetGlobal) after synchronize.
extern "C" {
__attribute__((device)) xb_fault_record xb_fault_record_slot;
}

namespace xb {

// The launch's dynamic shared memory, 128-byte aligned as on the other platforms.
extern __shared__ __attribute__((aligned(128))) unsigned char xb_dynamic_shared_memory[];

namespace detail {

template <mem_scope S>
struct amdgcn_scope;
template <>
struct amdgcn_scope<mem_scope::block> {
  static constexpr int value = __HIP_MEMORY_SCOPE_WORKGROUP;
};
template <>
struct amdgcn_scope<mem_scope::device> {
  static constexpr int value = __HIP_MEMORY_SCOPE_AGENT;
};
template <>
struct amdgcn_scope<mem_scope::system> {
  static constexpr int value = __HIP_MEMORY_SCOPE_SYSTEM;
};

XB_INLINE constexpr int amdgcn_order(mem_order o) {
  return o == mem_order::relaxed   ? __ATOMIC_RELAXED
       : o == mem_order::acquire   ? __ATOMIC_ACQUIRE
       : o == mem_order::release   ? __ATOMIC_RELEASE
       : o == mem_order::acq_rel   ? __ATOMIC_ACQ_REL
                                   : __ATOMIC_SEQ_CST;
}

// A fence at one scope. The builtin wants its order and scope as literal constants (a
// template parameter is rejected), hence one call per pair.
#define XB_AMDGCN_FENCE_AT(order, s)                                  \
  do {                                                               \
    if ((s) == mem_scope::block) __builtin_amdgcn_fence(order, "workgroup"); \
    else if ((s) == mem_scope::device) __builtin_amdgcn_fence(order, "agent"); \
    else __builtin_amdgcn_fence(order, "");                          \
  } while (0)

// Whether waves have 32 lanes: clang-19 defines the wave size as a macro and folds its
// builtin only after the control flow is built (leaving a branch on a constant); clang 22
// has dropped the macro and folds the builtin.
XB_INLINE bool wave32() {
#if defined(__AMDGCN_WAVEFRONT_SIZE)
  return __AMDGCN_WAVEFRONT_SIZE == 32;
#else
  return __builtin_amdgcn_wavefrontsize() == 32;
#endif
}

struct amdgcn_platform {
  // Ordered atomics are relaxed atomics between fences at their scope, on every compiler.
  // An atomic's own synchronization scope does not reliably cover every address space:
  // clang-19 (and ROCm compilers of that age) give each non-seq_cst __hip_atomic_* the
  // "<scope>-one-as" scope, which orders only the atomic's address space, so an acq_rel add
  // on the LDS word released and acquired LDS only and a kernel's global stores could reach
  // a waiter on the other CU of an RDNA WGP late. __builtin_amdgcn_fence takes its scope
  // string literally ("workgroup", "agent", "": every address space), so the fences order
  // global and LDS data alike. The backend emits for the fence pair what it emits for an
  // ordered atomic: the waits before the release, the cache invalidation after the acquire
  // (docs/amd-memory-model.md has the sequence per target; the lowering tests assert it).
  template <mem_scope S>
  static XB_INLINE void release_fence(mem_order o) {
    if (o == mem_order::seq_cst) XB_AMDGCN_FENCE_AT(__ATOMIC_SEQ_CST, S);
    else if (o == mem_order::release || o == mem_order::acq_rel) XB_AMDGCN_FENCE_AT(__ATOMIC_RELEASE, S);
  }
  template <mem_scope S>
  static XB_INLINE void acquire_fence(mem_order o) {
    if (o == mem_order::seq_cst) XB_AMDGCN_FENCE_AT(__ATOMIC_SEQ_CST, S);
    else if (o == mem_order::acquire || o == mem_order::acq_rel) XB_AMDGCN_FENCE_AT(__ATOMIC_ACQUIRE, S);
  }

  // The builtins take their order and scope as constants: every access here is relaxed.
  template <mem_scope S>
  static XB_INLINE uint64_t load(const uint64_t* w, mem_order o) {
    const uint64_t v = __hip_atomic_load(const_cast<uint64_t*>(w), __ATOMIC_RELAXED, amdgcn_scope<S>::value);
    acquire_fence<S>(o);
    return v;
  }
  template <mem_scope S>
  static XB_INLINE void store(uint64_t* w, uint64_t v, mem_order o) {
    release_fence<S>(o);
    __hip_atomic_store(w, v, __ATOMIC_RELAXED, amdgcn_scope<S>::value);
  }
  template <mem_scope S>
  static XB_INLINE uint64_t fetch_add(uint64_t* w, uint64_t v, mem_order o) {
    release_fence<S>(o);
    const uint64_t old = __hip_atomic_fetch_add(w, v, __ATOMIC_RELAXED, amdgcn_scope<S>::value);
    acquire_fence<S>(o);
    return old;
  }
  // A failed exchange orders nothing (its failure order is relaxed), but the acquire fence
  // is not skipped for it: a branch would cost more than the fence on the rare retry.
  template <mem_scope S>
  static XB_INLINE bool compare_exchange(uint64_t* w, uint64_t& expected, uint64_t desired, mem_order o) {
    release_fence<S>(o);
    const bool swapped = __hip_atomic_compare_exchange_strong(w, &expected, desired, __ATOMIC_RELAXED,
                                                              __ATOMIC_RELAXED, amdgcn_scope<S>::value);
    acquire_fence<S>(o);
    return swapped;
  }

  // Relaxed polls, then one acquire fence once the poll succeeded (an acquire load would
  // invalidate caches on every poll at agent scope).
  template <mem_scope S>
  static XB_INLINE uint64_t poll(const uint64_t* w) {
    return load<S>(w, mem_order::relaxed);
  }
  template <mem_scope S>
  static XB_INLINE void after_poll() {
    XB_AMDGCN_FENCE_AT(__ATOMIC_ACQUIRE, S);
  }
  // An acquire invalidates caches (buffer_gl0_inv, global_inv, buffer_wbinvl1_vol, ...):
  // carried by every arrival's RMW it would cost each arrival that, where only the thread
  // that completes a phase needs it. The completer fences instead.
  template <mem_scope S>
  static constexpr bool acquiring_rmw_is_cheap() {
    return false;
  }

  static XB_INLINE void fence(mem_scope s, mem_order o) {
    switch (o) {
      case mem_order::relaxed: return;
      case mem_order::acquire: XB_AMDGCN_FENCE_AT(__ATOMIC_ACQUIRE, s); return;
      case mem_order::release: XB_AMDGCN_FENCE_AT(__ATOMIC_RELEASE, s); return;
      case mem_order::acq_rel: XB_AMDGCN_FENCE_AT(__ATOMIC_ACQ_REL, s); return;
      default: XB_AMDGCN_FENCE_AT(__ATOMIC_SEQ_CST, s); return;
    }
  }
  // No asynchronous copies here: a block-scope fence orders the thread's writes before them.
  static XB_INLINE void fence_proxy_async() { fence(mem_scope::block, mem_order::acq_rel); }

  // The constant-rate counter in nanoseconds, at the rate the runtime reported for the device
  // (amdgcn_clock.hpp: the rates, the default, the fixed-point arithmetic).
  static XB_INLINE uint64_t now_ns() {
    return clock_ticks_to_ns(__builtin_readsteadycounter(), xb_clock_ns_per_tick_q32);
  }
  static XB_INLINE uint64_t wait_timeout_ns() { return XB_DEFAULT_WAIT_TIMEOUT_NS; }

  static XB_INLINE bool aborted() {
    return __hip_atomic_load(&xb_fault_record_slot.kind, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT) != 0;
  }

  // Spin 64 polls, then sleep 1, 2, 4 units (64 clocks each) for 4 polls each, then 8 units
  // per poll from then on; checked builds leave a faulted launch. gfx12 sleeps for a
  // register's count (s_sleep_var), computed without a branch; elsewhere s_sleep takes an
  // immediate, so the longest sleep, where a long wait spends its polls, is tested first and
  // costs one compare and branch.
  static XB_INLINE void backoff(uint32_t& iteration) {
    if (XB_CHECKED && aborted()) __builtin_amdgcn_endpgm();
    constexpr uint32_t spins = 64;
    if (iteration >= spins) {
      const uint32_t step = (iteration - spins) / 4;
#if defined(__GFX12__)
      __builtin_amdgcn_s_sleep_var(1u << (step < 3 ? step : 3));
#else
      if (XB_LIKELY(step >= 3)) __builtin_amdgcn_s_sleep(8);
      else if (step == 2) __builtin_amdgcn_s_sleep(4);
      else if (step == 1) __builtin_amdgcn_s_sleep(2);
      else __builtin_amdgcn_s_sleep(1);
#endif
    }
    ++iteration;
  }
  // Every poll of a wait: the same back-off (cuda.hpp sleeps longer in sanitizer builds, for
  // compute-sanitizer, which has no AMD counterpart).
  static XB_INLINE void wait_backoff(uint32_t& iteration) { backoff(iteration); }
  // A non-blocking probe failed (try_wait): checked builds leave a faulted launch (cuda.hpp).
  static XB_INLINE void relax() {
    if (XB_CHECKED && aborted()) __builtin_amdgcn_endpgm();
  }
  static XB_INLINE void notify(uint64_t*) {}
  // The active lanes of a wave; the lowest leads. A wave issues each instruction, fences and
  // loads included, for all its active lanes: the leader's release fence waits for the
  // stores of every lane (s_waitcnt counts the wave's accesses) and its cache maintenance is
  // per CU, as when LLVM's atomic optimizer combines a wave's atomics into one lane's; and
  // one lane's acquire (a poll and its fence, or the acq_rel atomic) stands for the wave's
  // (acquires_as_one()), so that polls and every decision on the word are scalar, and a
  // wave whose leader completed a phase returns without polling.
  struct wave {
    // Whether the lanes all pass the same barrier and b: one readfirstlane and one compare
    // per 32-bit half, which the compiler drops where it can prove the values wave-uniform
    // (constants; an LDS barrier is compared by its 32-bit LDS address, which is a constant
    // for a __shared__ or dynamic shared barrier, where its generic address is not). The
    // lanes must also agree on whether it is in LDS: each side of the branch below compares
    // with the first lane of its own side only.
    XB_INLINE bool agree(const void* barrier, uint64_t b) const {
      const bool lds = __builtin_amdgcn_is_shared(barrier);
      bool same = same_on_all(uint32_t(lds));
      if (lds) {
        typedef __attribute__((address_space(3))) const char* lds_pointer;
        same = same && same_on_all(uint32_t(reinterpret_cast<uintptr_t>((lds_pointer)barrier)));
      } else {
        same = same && same_on_all(uint32_t(reinterpret_cast<uintptr_t>(barrier))) &&
               same_on_all(uint32_t(reinterpret_cast<uintptr_t>(barrier) >> 32));
      }
      return __builtin_amdgcn_ballot_w64(!(same && same_on_all(uint32_t(b)) && same_on_all(uint32_t(b >> 32)))) == 0;
    }
    static XB_INLINE bool same_on_all(uint32_t v) { return v == uint32_t(__builtin_amdgcn_readfirstlane(int(v))); }
    XB_INLINE uint32_t size() const { return uint32_t(__builtin_popcountll(__builtin_amdgcn_read_exec())); }
    XB_INLINE bool leads() const { return leader; }
    XB_INLINE uint64_t broadcast(uint64_t v) const {
      const uint32_t lo = uint32_t(__builtin_amdgcn_readfirstlane(int(uint32_t(v))));
      const uint32_t hi = uint32_t(__builtin_amdgcn_readfirstlane(int(uint32_t(v >> 32))));
      return uint64_t(hi) << 32 | lo;
    }
    XB_INLINE constexpr bool acquires_as_one() const { return true; }
    XB_INLINE void gather() const {}
    // LLVM's atomic optimizer combines an atomic whose address is wave-uniform into one
    // lane's, with a scan of the lanes' shares, even where one lane runs it: offsetting the
    // address by a value that is zero in the leader but per-lane to the compiler makes it
    // leave the atomic alone. On wave64 that is the leader's count of active lanes below it
    // in the low half (below_lo), which the compiler cannot relate to the full count
    // leads() tests; on wave32 the full count is that same value, so a zero from an asm
    // move serves.
    XB_INLINE uint64_t* solo(uint64_t* w) const {
      uint32_t zero = below_lo;
      if (wave32()) asm volatile("v_mov_b32 %0, 0" : "=v"(zero));
      return reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(w) + zero);
    }
    // Counted once, where the group forms: its lanes stay together through the call (they
    // decide alike), so every later election (the publish, the arming) reuses the
    // arrival's. That also lets the AMDGPU ISA checks follow one lane through all of them:
    // a recount looks to them like a second, independent election.
    uint32_t below_lo = __builtin_amdgcn_mbcnt_lo(uint32_t(__builtin_amdgcn_read_exec()), 0);
    bool leader = wave32() ? below_lo == 0
                           : __builtin_amdgcn_mbcnt_hi(uint32_t(__builtin_amdgcn_read_exec() >> 32), below_lo) == 0;
  };

  // Lane groups (lane_group.hpp): the wave's active lanes.
  static XB_INLINE wave lanes_here() { return wave(); }

  static XB_INLINE bool is_shared(const void* p) {
    return __builtin_amdgcn_is_shared(p);
  }

  static XB_INLINE void copy(void* dst, const void* src, size_t bytes) {
    typedef unsigned v4u __attribute__((ext_vector_type(4)));
    wide_copy<v4u>(dst, src, bytes);
  }

  static XB_INLINE unsigned char* dynamic_shared() { return xb_dynamic_shared_memory; }

  // A completion function is copied into the barrier bytewise (device code has no
  // placement new), so it must be trivially copyable, as captureless and pointer-capturing
  // lambdas are.
  template <class F>
  static XB_INLINE void construct_copy(F& slot, const F& f) {
    static_assert(__is_trivially_copyable(F), "xb::barrier: a completion function must be trivially copyable on GPU targets");
    __builtin_memcpy(static_cast<void*>(&slot), static_cast<const void*>(&f), sizeof(F));
  }

  // Records the first fault of the launch and ends the calling wave (s_endpgm: a wave, not
  // a lane, is what AMDGPU can end); checked waits of the other waves see `kind` and end too.
  [[noreturn]] static XB_INLINE void fault(xb_fault_record r) {
    r.block[0] = __builtin_amdgcn_workgroup_id_x();
    r.block[1] = __builtin_amdgcn_workgroup_id_y();
    r.block[2] = __builtin_amdgcn_workgroup_id_z();
    r.thread[0] = __builtin_amdgcn_workitem_id_x();
    r.thread[1] = __builtin_amdgcn_workitem_id_y();
    r.thread[2] = __builtin_amdgcn_workitem_id_z();
    xb_fault_record* slot = &xb_fault_record_slot;
    uint32_t unclaimed = 0;
    if (__hip_atomic_compare_exchange_strong(&slot->op, &unclaimed, r.op, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                             __HIP_MEMORY_SCOPE_AGENT)) {
      const uint32_t kind = r.kind;
      r.kind = 0;
      *slot = r;  // op stays claimed (same value); publish kind last
      __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "");
      __hip_atomic_store(&slot->kind, kind, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
    }
    __builtin_amdgcn_endpgm();
  }
};

using platform = amdgcn_platform;

}  // namespace detail
}  // namespace xb

#if !defined(__HIP_INCLUDE_HIP_HIP_RUNTIME_H)

// Without ROCm headers: indices from the work-item and work-group builtins, sizes from the
// HSA dispatch packet (workgroup_size_x/y/z at bytes 4/6/8, grid_size_x/y/z, in work-items,
// at bytes 12/16/20).
#define __restrict__ __restrict
#define __launch_bounds__(...)

namespace xb {
namespace amdgcn {
struct uint3 {
  unsigned x, y, z;
};
XB_INLINE uint3 thread_index() {
  return uint3{__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z()};
}
XB_INLINE uint3 block_index() {
  return uint3{__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()};
}
XB_INLINE uint3 block_dim() {
  const uint16_t* packet = static_cast<const uint16_t*>(__builtin_amdgcn_dispatch_ptr());
  return uint3{packet[2], packet[3], packet[4]};
}
XB_INLINE uint3 grid_dim() {
  const uint32_t* packet = static_cast<const uint32_t*>(__builtin_amdgcn_dispatch_ptr());
  const uint3 block = block_dim();
  return uint3{packet[3] / block.x, packet[4] / block.y, packet[5] / block.z};
}
// What HIP's __syncthreads is: release, s_barrier (s_barrier_signal/wait on gfx12), acquire.
XB_INLINE void syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
}  // namespace amdgcn
}  // namespace xb

#define threadIdx (::xb::amdgcn::thread_index())
#define blockIdx (::xb::amdgcn::block_index())
#define blockDim (::xb::amdgcn::block_dim())
#define gridDim (::xb::amdgcn::grid_dim())
#define __syncthreads() ::xb::amdgcn::syncthreads()
#define __threadfence_block() ::xb::detail::amdgcn_platform::fence(::xb::detail::mem_scope::block, ::xb::detail::mem_order::seq_cst)
#define __threadfence() ::xb::detail::amdgcn_platform::fence(::xb::detail::mem_scope::device, ::xb::detail::mem_order::seq_cst)
#define __threadfence_system() ::xb::detail::amdgcn_platform::fence(::xb::detail::mem_scope::system, ::xb::detail::mem_order::seq_cst)
// s_sleep takes an immediate: a short fixed sleep (64 clocks) stands for any duration.
#define __nanosleep(ns) __builtin_amdgcn_s_sleep(1)

#endif  // !__HIP_INCLUDE_HIP_HIP_RUNTIME_H
