// One kernel per barrier operation, for the lowering tests and `xbar lower`: each kernel
// performs its operation once on a block-scope barrier in (dynamic) shared memory, which
// the caller is assumed to have initialized, and stores what it returns so that nothing is
// optimized away. The instructions of kernel xbl_<op> are what <op> becomes on a target.
#include <xbarrier/barrier.hpp>

using block_barrier = xb::barrier<xb::thread_scope_block>;

XB_INLINE block_barrier& shared_barrier() { return *xb::dynamic_shared<block_barrier>(); }

XB_KERNEL void xbl_init(unsigned count) { init(&shared_barrier(), count); }

XB_KERNEL void xbl_arrive(unsigned long long* out) { *out = shared_barrier().arrive().state(); }

XB_KERNEL void xbl_wait(unsigned long long token) {
  shared_barrier().wait(xb::arrival_token(token));
}

XB_KERNEL void xbl_arrive_and_wait() { shared_barrier().arrive_and_wait(); }

XB_KERNEL void xbl_arrive_tx(unsigned long long* out, unsigned bytes) {
  *out = xb::device::barrier_arrive_tx(shared_barrier(), 1, bytes).state();
}

XB_KERNEL void xbl_expect_tx(unsigned bytes) { xb::device::barrier_expect_tx(shared_barrier(), bytes); }

XB_KERNEL void xbl_memcpy_async_tx(const unsigned* src, unsigned bytes) {
  // The destination follows the barrier in dynamic shared memory (16-byte aligned).
  void* dst = xb::dynamic_shared<unsigned char>() + 16;
  xb::device::memcpy_async_tx(dst, src, xb::aligned_size_t<16>(bytes), shared_barrier());
}

XB_KERNEL void xbl_arrive_and_drop() { shared_barrier().arrive_and_drop(); }

XB_KERNEL void xbl_fence_cta() { xb::membar_cta(); }
XB_KERNEL void xbl_fence_gl() { xb::membar_gl(); }
XB_KERNEL void xbl_fence_sys() { xb::membar_sys(); }

// The full-workgroup barrier (s_barrier on AMDGPU, BAR.SYNC on NVIDIA), for comparison.
XB_KERNEL void xbl_syncthreads() { __syncthreads(); }

// arrive_and_wait on a barrier with a completion function (sm_90 native: two mbarriers and
// a claim; the protocol elsewhere).
struct bump {
  unsigned* counter;
  XB_INLINE void operator()() noexcept { ++*counter; }
};
XB_KERNEL void xbl_completion_arrive_and_wait() {
  (*xb::dynamic_shared<xb::barrier<xb::thread_scope_block, bump>>()).arrive_and_wait();
}
