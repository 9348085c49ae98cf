// xbarrier/cuda_compat.hpp - CUDA's barrier names on every target, so that CUDA kernel code
// written against <cuda/barrier> compiles unchanged for AMD GPUs and the host backend:
// include this header instead of <cuda/barrier>.
//
//   cuda::barrier<Scope, Completion>, cuda::thread_scope, cuda::thread_scope_{system,device,block,thread}
//   cuda::device::barrier_arrive_tx / barrier_expect_tx / memcpy_async_tx / barrier_native_handle
//   cuda::memcpy_async, cuda::aligned_size_t, cuda::std::move
//
// Under nvcc it is CCCL itself (<cuda/barrier>), so CUDA builds keep NVIDIA's implementation;
// elsewhere the names are xb's, with the same semantics (barrier.hpp).
#pragma once

#include "barrier.hpp"

#if defined(XB_PLATFORM_CUDA)
#include <cuda/barrier>
#else
namespace cuda {

using thread_scope = ::xb::thread_scope;
constexpr thread_scope thread_scope_system = ::xb::thread_scope_system;
constexpr thread_scope thread_scope_device = ::xb::thread_scope_device;
constexpr thread_scope thread_scope_block = ::xb::thread_scope_block;
constexpr thread_scope thread_scope_thread = ::xb::thread_scope_thread;

template <thread_scope Scope, class Completion = ::xb::empty_completion>
using barrier = ::xb::barrier<Scope, Completion>;

template <size_t Align>
using aligned_size_t = ::xb::aligned_size_t<Align>;

using ::xb::memcpy_async;

namespace device {
using ::xb::device::barrier_arrive_tx;
using ::xb::device::barrier_expect_tx;
using ::xb::device::barrier_native_handle;
using ::xb::device::memcpy_async_tx;
}  // namespace device

// What CUDA kernels take from cuda::std around barriers (tokens are moved into wait).
namespace std {
template <class T>
struct remove_reference {
  using type = T;
};
template <class T>
struct remove_reference<T&> {
  using type = T;
};
template <class T>
XB_HOST_DEVICE constexpr typename remove_reference<T>::type&& move(T&& t) noexcept {
  return static_cast<typename remove_reference<T>::type&&>(t);
}
}  // namespace std

}  // namespace cuda
#endif
