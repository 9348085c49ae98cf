// xbarrier/kernel.hpp - kernel portability: the same kernel source compiles with nvcc,
// clang/hipcc and the host C++ compiler.
//
//   XB_KERNEL void name(args...)   an exported kernel, launched by name from Rust
//   xb::dynamic_shared<T>()        the launch's dynamic shared memory
//   xb::this_thread_block()        a group with thread_rank(), size(), sync()
//   xb::clock_ns()                 a monotonic clock in nanoseconds
//
// The CUDA vocabulary itself (__global__ __device__ __host__ __shared__ __forceinline__
// __restrict__ __launch_bounds__, threadIdx blockIdx blockDim gridDim, __syncthreads()
// __threadfence*() __nanosleep()) is nvcc's, or the platform layer's on AMDGPU without ROCm
// headers and on the host (platform/amdgcn.hpp, platform/host.hpp). On the host,
// `extern __shared__ T x[]` has no equivalent: use xb::dynamic_shared<T>().
#pragma once
#include <stdint.h>

#include "platform.hpp"

#define XB_KERNEL extern "C" __global__

namespace xb {

// 128-byte aligned on every platform.
template <class T>
XB_INLINE T* dynamic_shared() {
  return reinterpret_cast<T*>(detail::platform::dynamic_shared());
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
