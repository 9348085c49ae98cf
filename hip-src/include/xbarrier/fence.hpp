// xbarrier/fence.hpp - scoped fences: xb::fence(scope, order) and the three PTX membar
// levels. Each platform layer lowers them (platform::fence): PTX fence/membar on CUDA,
// __builtin_amdgcn_fence(order, "workgroup"/"agent"/"") on AMDGPU, atomic_thread_fence on
// the host.
#pragma once
#include "platform.hpp"

namespace xb {

enum memory_order : int {
  memory_order_relaxed,
  memory_order_consume,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

namespace detail {
XB_INLINE constexpr mem_order to_mem_order(memory_order o) {
  return o == memory_order_consume || o == memory_order_acquire ? mem_order::acquire
       : o == memory_order_release                              ? mem_order::release
       : o == memory_order_acq_rel                              ? mem_order::acq_rel
                                                                : mem_order::seq_cst;
}
}  // namespace detail

// Orders this thread's memory accesses for observers within `scope` (a relaxed fence is none).
XB_INLINE void fence(thread_scope scope, memory_order order) {
  if (order == memory_order_relaxed) return;
  detail::platform::fence(detail::scope_of(scope), detail::to_mem_order(order));
}

// membar.cta / membar.gl / membar.sys: sequentially consistent fences at block, device and
// system scope (PTX defines membar.level as fence.sc.level from sm_70 on).
XB_INLINE void membar_cta() { fence(thread_scope_block, memory_order_seq_cst); }
XB_INLINE void membar_gl() { fence(thread_scope_device, memory_order_seq_cst); }
XB_INLINE void membar_sys() { fence(thread_scope_system, memory_order_seq_cst); }

// Orders generic-proxy writes to shared memory before async-proxy reads (bulk copies) of
// it. Only CUDA sm_90 has an async proxy; elsewhere a block-scope fence suffices.
XB_INLINE void fence_proxy_async() { detail::platform::fence_proxy_async(); }

}  // namespace xb
