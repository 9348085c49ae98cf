// xbarrier/platform/host.hpp - the host platform layer: the protocol's primitives on CPU
// threads (backend-host runs each kernel thread as a fiber on a few OS threads per block),
// and the CUDA kernel vocabulary for kernels compiled by the host C++ compiler.
//
// Atomics are GCC/Clang __atomic builtins on plain words, which ThreadSanitizer understands.
// Waiting yields the fiber to its siblings; with no scheduler (a plain std::thread driver,
// such as the TSAN stress test) it spins briefly, then yields the OS thread.
//
// Kernels: `__shared__` variables are statics; every running block has its own copy of the
// kernel's shared object, hence its own statics, in kernels and in the device functions they
// call alike (templates and inline functions included).
// `extern __shared__ T x[]` has no host equivalent: use xb::dynamic_shared<T>() (kernel.hpp).
#pragma once
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <new>

#include "../host_abi.h"
#include "../lane_group.hpp"
#include "../protocol.hpp"
#include "../scope.hpp"

namespace xb {
namespace host {

// The writable memory of the kernel object this code is linked into (its copy for the
// calling block's slot): where __shared__ variables live. A section of their own cannot hold
// them all: GCC puts the statics of template and inline functions into COMDAT sections, and
// refuses a named section there.
struct static_data {
  const char* begin[4];
  const char* end[4];
  int count;
};
inline int find_static_data(dl_phdr_info* info, size_t, void* arg) {
  static_data* d = static_cast<static_data*>(arg);
  const char* self = reinterpret_cast<const char*>(&find_static_data);
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& h = info->dlpi_phdr[i];
    const char* start = reinterpret_cast<const char*>(info->dlpi_addr + h.p_vaddr);
    if (h.p_type == PT_LOAD && (h.p_flags & PF_X) && self >= start && self < start + h.p_memsz) mine = true;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum && d->count < 4; ++i) {
    const ElfW(Phdr)& h = info->dlpi_phdr[i];
    if (h.p_type != PT_LOAD || !(h.p_flags & PF_W)) continue;
    d->begin[d->count] = reinterpret_cast<const char*>(info->dlpi_addr + h.p_vaddr);
    d->end[d->count] = d->begin[d->count] + h.p_memsz;
    ++d->count;
  }
  return 1;
}
inline const static_data& this_object_static_data() {
  static const static_data data = [] {
    static_data d = {};
    dl_iterate_phdr(find_static_data, &d);
    return d;
  }();
  return data;
}

// Thrown to unwind a kernel thread after a fault or an abort; caught by xb_host_invoke.
struct kernel_aborted {};

// The kernel thread running on this OS thread (the scheduler sets it before each resume).
inline thread_local xb_host_thread* current_thread = nullptr;

inline xb_host_thread* current() { return current_thread; }

}  // namespace host

namespace detail {

struct host_platform {
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
  template <mem_scope S>
  static XB_INLINE bool compare_exchange(uint64_t* w, uint64_t& expected, uint64_t desired,
                                         mem_order o) {
    return __atomic_compare_exchange_n(w, &expected, desired, false, static_cast<int>(o),
                                       __ATOMIC_RELAXED);
  }

  // Polling loads. ThreadSanitizer does not model standalone fences, so the host polls with
  // acquire loads and needs no fence after a successful poll.
  template <mem_scope S>
  static XB_INLINE uint64_t poll(const uint64_t* w) {
    return __atomic_load_n(w, __ATOMIC_ACQUIRE);
  }
  template <mem_scope S>
  static XB_INLINE void after_poll() {}
  // Acquiring RMWs, not fences, for the same reason (and on x86-64 every atomic RMW is a
  // full barrier anyway).
  template <mem_scope S>
  static constexpr bool acquiring_rmw_is_cheap() {
    return true;
  }

  static XB_INLINE void fence(mem_scope, mem_order o) { __atomic_thread_fence(static_cast<int>(o)); }
  // No asynchronous copies here: a block-scope fence orders the thread's writes before them.
  static XB_INLINE void fence_proxy_async() { fence(mem_scope::block, mem_order::acq_rel); }

  static XB_INLINE void copy(void* dst, const void* src, size_t bytes) { memcpy(dst, src, bytes); }

  static XB_INLINE uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }

  static XB_INLINE uint64_t wait_timeout_ns() {
    xb_host_thread* t = host::current();
    return t ? t->launch->wait_timeout_ns : XB_DEFAULT_WAIT_TIMEOUT_NS;
  }

  // Called once per failed poll. Inside a launch: unwind if the launch was aborted, else
  // let sibling fibers run. Outside one: spin a little, then give the core away.
  static inline void backoff(uint32_t& iteration) {
    ++iteration;
    xb_host_thread* t = host::current();
    if (t) {
      if (__atomic_load_n(&t->launch->abort, __ATOMIC_RELAXED)) throw host::kernel_aborted{};
      if (t->launch->yield_fn) {
        t->launch->yield_fn(t->fiber);
        return;
      }
    }
    if (iteration < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      return;
    }
    sched_yield();
  }

  // Every poll of a wait: the same back-off (a fiber yields at once).
  static inline void wait_backoff(uint32_t& iteration) { backoff(iteration); }

  // A non-blocking probe failed (try_wait), or a thread backs off in a loop on plain memory
  // (__nanosleep): let sibling fibers run. Marked on the thread, so that the OS thread that
  // runs it, which learns of a published phase but not of a plain store, parks only briefly
  // meanwhile.
  static inline void relax() {
    xb_host_thread* t = host::current();
    if (t && t->launch->yield_fn) {
      if (__atomic_load_n(&t->launch->abort, __ATOMIC_RELAXED)) throw host::kernel_aborted{};
      t->polled = 1;
      t->launch->yield_fn(t->fiber);
    }
  }

  // A barrier word changed in a way a waiter may care about (a phase was published).
  static XB_INLINE void notify(uint64_t*) {
    xb_host_thread* t = host::current();
    if (t && t->launch->notify_fn) t->launch->notify_fn(t->launch->scheduler);
  }

  // Host threads have no warps: each arrives alone.
  static XB_INLINE single_lane lanes_here() { return single_lane(); }

  static inline bool is_shared(const void* p) {
    xb_host_thread* t = host::current();
    if (!t) return true;  // a bare driver has no notion of shared memory
    const char* c = static_cast<const char*>(p);
    const char* dyn = reinterpret_cast<const char*>(t->block->dynamic_shared);
    if (dyn && c >= dyn && c < dyn + t->block->dynamic_shared_bytes) return true;
    const host::static_data& d = host::this_object_static_data();
    for (int i = 0; i < d.count; ++i)
      if (c >= d.begin[i] && c < d.end[i]) return true;
    return false;
  }
  // What the checked engine adds (XB_SHADOW_MODEL=1). Nothing to release apart: the mbarrier
  // model's updates are acq_rel read-modify-writes, which TSAN models and fences not.
  static inline bool is_shared_at_run_time(const void* p) { return is_shared(p); }
  static inline bool is_global(const void* p) { return !is_shared(p); }
  static inline void release_block() {}

  // The launch's dynamic shared memory (the backend's arena, 128-byte aligned).
  static XB_INLINE unsigned char* dynamic_shared() { return host::current()->block->dynamic_shared; }

  // A completion function is copied into the barrier with its copy constructor.
  template <class F>
  static XB_INLINE void construct_copy(F& slot, const F& f) {
    ::new (static_cast<void*>(&slot)) F(f);
  }

  [[noreturn]] static inline void fault(xb_fault_record r) {
    xb_host_thread* t = host::current();
    if (!t) {
      fprintf(stderr, "xbarrier: fault kind %u in op %u (value %lld, limit %lld)\n", r.kind,
              r.op, static_cast<long long>(r.value), static_cast<long long>(r.limit));
      abort();
    }
    for (int i = 0; i < 3; ++i) {
      r.block[i] = t->block->index[i];
      r.thread[i] = t->index[i];
    }
    xb_host_launch* l = t->launch;
    if (__atomic_exchange_n(&l->fault_claimed, 1u, __ATOMIC_ACQ_REL) == 0) l->fault = r;
    __atomic_store_n(&l->abort, 1u, __ATOMIC_RELEASE);
    if (l->notify_fn) l->notify_fn(l->scheduler);
    throw host::kernel_aborted{};
  }
};

using platform = host_platform;

}  // namespace detail

// The CUDA kernel vocabulary on CPU threads.
namespace host {
struct uint3 {
  unsigned x, y, z;
};
inline uint3 to_uint3(const uint32_t (&v)[3]) { return uint3{v[0], v[1], v[2]}; }
inline uint3 thread_index() { return to_uint3(current()->index); }
inline uint3 block_index() { return to_uint3(current()->block->index); }
inline uint3 block_dim() { return to_uint3(current()->launch->block); }
inline uint3 grid_dim() { return to_uint3(current()->launch->grid); }

// __syncthreads(): the protocol on the block's own word, expecting every thread of it.
inline void syncthreads() {
  xb_host_block* b = current()->block;
  using proto = detail::protocol<detail::host_platform, thread_scope_block>;
  empty_completion none;
  const bool parity = proto::arrive(&b->syncthreads_word, 1, none, false);
  proto::wait_parity(&b->syncthreads_word, parity, XB_OP_SYNCTHREADS);
}
}  // namespace host
}  // namespace xb

#define __global__ __attribute__((visibility("default"), used))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

#define threadIdx (::xb::host::thread_index())
#define blockIdx (::xb::host::block_index())
#define blockDim (::xb::host::block_dim())
#define gridDim (::xb::host::grid_dim())
#define __syncthreads() ::xb::host::syncthreads()
#define __threadfence_block() ::xb::detail::host_platform::fence(::xb::detail::mem_scope::block, ::xb::detail::mem_order::seq_cst)
#define __threadfence() ::xb::detail::host_platform::fence(::xb::detail::mem_scope::device, ::xb::detail::mem_order::seq_cst)
#define __threadfence_system() ::xb::detail::host_platform::fence(::xb::detail::mem_scope::system, ::xb::detail::mem_order::seq_cst)
// Kernel threads are fibers on the host: a thread spinning on plain memory must let its
// siblings run. CUDA code that backs off with __nanosleep does so here.
#define __nanosleep(ns) ::xb::detail::host_platform::relax()

// The checked engine's mbarrier on CPU threads (XB_SHADOW_MODEL=1 test builds).
#include "host_mbarrier_model.hpp"
