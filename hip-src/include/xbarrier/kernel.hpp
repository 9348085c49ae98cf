// xbarrier/kernel.hpp - kernel portability: the same kernel source compiles with nvcc,
// clang/hipcc and the host C++ compiler.
//
//   XB_KERNEL void name(args...)   an exported kernel, launched by name from Rust
//   __global__ __device__ __host__ __shared__ __forceinline__ __restrict__
//   threadIdx blockIdx blockDim gridDim __syncthreads() __threadfence*()
//   xb::dynamic_shared<T>()        the launch's dynamic shared memory
//   xb::this_thread_block()        a group with thread_rank(), size(), sync()
//
// On the host, `__shared__` variables are static locals in a section of their own; every
// running block has its own copy of the kernel's shared object, hence its own variables.
// `extern __shared__ T x[]` has no host equivalent: use xb::dynamic_shared<T>().
#pragma once
#include "barrier_object.hpp"
#include "fence.hpp"

#define XB_KERNEL extern "C" __global__

#if defined(XB_PLATFORM_HOST)

#define __global__ __attribute__((visibility("default"), used))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static __attribute__((section("xb_shared")))
#define __restrict__ __restrict
#define __launch_bounds__(...)

namespace xb {
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

#define threadIdx (::xb::host::thread_index())
#define blockIdx (::xb::host::block_index())
#define blockDim (::xb::host::block_dim())
#define gridDim (::xb::host::grid_dim())
#define __syncthreads() ::xb::host::syncthreads()
#define __threadfence_block() ::xb::fence(::xb::thread_scope_block, ::xb::memory_order_seq_cst)
#define __threadfence() ::xb::fence(::xb::thread_scope_device, ::xb::memory_order_seq_cst)
// Kernel threads are fibers on the host: a thread spinning on plain memory must let its
// siblings run. CUDA code that backs off with __nanosleep does so here.
#define __nanosleep(ns) ::xb::detail::host_platform::relax()
#define __threadfence_system() ::xb::fence(::xb::thread_scope_system, ::xb::memory_order_seq_cst)

#endif  // XB_PLATFORM_HOST

#if defined(XB_PLATFORM_AMDGCN) && !defined(__HIP_INCLUDE_HIP_HIP_RUNTIME_H)

// AMDGPU without ROCm headers: indices from the work-item and work-group builtins, sizes
// from the HSA dispatch packet (workgroup_size_x/y/z at bytes 4/6/8, grid_size_x/y/z, in
// work-items, at bytes 12/16/20).
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
#define __threadfence_block() ::xb::fence(::xb::thread_scope_block, ::xb::memory_order_seq_cst)
#define __threadfence() ::xb::fence(::xb::thread_scope_device, ::xb::memory_order_seq_cst)
#define __threadfence_system() ::xb::fence(::xb::thread_scope_system, ::xb::memory_order_seq_cst)
// s_sleep takes an immediate: a short fixed sleep (64 clocks) stands for any duration.
#define __nanosleep(ns) __builtin_amdgcn_s_sleep(1)

#endif  // XB_PLATFORM_AMDGCN

namespace xb {

template <class T>
XB_INLINE T* dynamic_shared() {
#if defined(XB_PLATFORM_HOST)
  return reinterpret_cast<T*>(host::current()->block->dynamic_shared);
#else
  // 128-byte aligned, as the host backend's arena: after a kernel's static shared variables
  // the base is otherwise only 16-byte aligned, and the copy engine writes stages that
  // straddle 128-byte lines measurably slower (8 % on the H200 at 16 bytes past a line).
  extern __shared__ __attribute__((aligned(128))) unsigned char xb_dynamic_shared_memory[];
  return reinterpret_cast<T*>(xb_dynamic_shared_memory);
#endif
}

// A monotonic clock in nanoseconds (for timeouts and measurements inside kernels).
XB_INLINE uint64_t clock_ns() { return detail::platform::now_ns(); }

// The calling thread's block as a group (the subset of cooperative_groups::thread_block
// that xb::memcpy_async needs).
struct thread_block {
  XB_INLINE unsigned thread_rank() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  XB_INLINE unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  XB_INLINE void sync() const { __syncthreads(); }
};
XB_INLINE thread_block this_thread_block() { return thread_block{}; }

}  // namespace xb
