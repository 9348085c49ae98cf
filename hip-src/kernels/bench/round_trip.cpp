// Block barrier round trip (round_trip.hpp has the loop and xb's kernels): the baselines,
// raw mbarrier PTX, CCCL's cuda::barrier, one-word counter barriers and __syncthreads, in
// CUDA images.
#include "round_trip.hpp"
#include "ptx.hpp"

#if defined(XB_PLATFORM_CUDA)
#include <cuda/barrier>

// Hand-written PTX: one mbarrier.arrive per thread, then try_wait.parity on the phase.
XB_KERNEL void xbb_rt_ptx(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report) {
#if XBB_PTX
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) xbb::ptx::init(&bar, blockDim.x);
  __syncthreads();
  uint32_t parity = 0;
  xbb::rt::run(iters, check, cycles, report, [&] {
    xbb::ptx::arrive(&bar);
    xbb::ptx::wait_parity(&bar, parity);
    parity ^= 1;
  });
#else
  if (threadIdx.x == 0 && blockIdx.x == 0) report[1] = 1;
#endif
}

// The raw-PTX round trip as a CUDA programmer writes it, outside the shared harness: one
// mbarrier.arrive per thread, then try_wait.parity on i & 1, in a loop of its own that the
// compiler may shape as it likes. With `check` set, each phase also passes data as in the
// harness, in a loop of its own.
XB_KERNEL void xbb_rt_ptx_plain(unsigned iters, unsigned check, unsigned long long* cycles,
                                unsigned long long* report) {
#if XBB_PTX
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) xbb::ptx::init(&bar, blockDim.x);
  __syncthreads();
  if (check) {
    unsigned* slots = xb::dynamic_shared<unsigned>();
    const unsigned n = blockDim.x, t = threadIdx.x, next = (t + 1) % n;
    unsigned stale = 0;
    for (unsigned i = 0; i < iters; ++i) {
      unsigned* slot = slots + (i & 1) * n;
      slot[t] = i * n + t;
      xbb::ptx::arrive(&bar);
      xbb::ptx::wait_parity(&bar, i & 1);
      stale += slot[next] != i * n + next;
    }
    xbb::count(report, stale);
    return;
  }
  const uint64_t start = xbb::cycles();
  for (unsigned i = 0; i < iters; ++i) {
    xbb::ptx::arrive(&bar);
    xbb::ptx::wait_parity(&bar, i & 1);
  }
  const uint64_t end = xbb::cycles();
  if (threadIdx.x == 0) cycles[blockIdx.x] = end - start;
#else
  if (threadIdx.x == 0 && blockIdx.x == 0) report[1] = 1;
#endif
}

// CCCL's cuda::barrier, as shipped with nvcc.
XB_KERNEL void xbb_rt_cccl(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report) {
  using barrier = cuda::barrier<cuda::thread_scope_block>;
  // CCCL's documented pattern: a __shared__ barrier set up by init(); its constructor is
  // not trivial, which nvcc warns about (it runs no constructor for __shared__ variables).
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
#pragma nv_diag_default static_var_with_dynamic_init
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  xbb::rt::run(iters, check, cycles, report, [&] { bar.arrive_and_wait(); });
}

// CCCL's cuda::barrier with the same completion function (CCCL runs it on its atomics
// path, not on mbarrier).
XB_KERNEL void xbb_rt_cccl_completion(unsigned iters, unsigned check, unsigned long long* cycles,
                                      unsigned long long* report) {
  using barrier = cuda::barrier<cuda::thread_scope_block, xbb::rt::count_steps>;
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
#pragma nv_diag_default static_var_with_dynamic_init
  __shared__ unsigned steps;
  xbb::rt::with_completion(bar, steps, iters, check, cycles, report);
}

// The floor of a software barrier on one shared-memory word, to size the emulated row: a
// monotonic arrival counter (phase i completes when it reaches (i + 1) * blockDim.x, so
// nothing is reset on the critical path), one release fetch_add per thread (nvcc combines a
// warp's into one), acquire polls. No tx-count, drop or completion step. With a 32-bit word
// the add is one ATOMS.ADD; with a 64-bit word it is a compare-and-swap loop on sm_90, as in
// the protocol, whose word must be 64 bits to hold the tx-count beside the arrivals.
template <class Word>
XB_INLINE void counter_barrier(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report) {
  __shared__ Word count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  cuda::atomic_ref<Word, cuda::thread_scope_block> ref(count);
  Word target = 0;
  xbb::rt::run(iters, check, cycles, report, [&] {
    target += blockDim.x;
    ref.fetch_add(1, cuda::std::memory_order_release);
    using Signed = cuda::std::make_signed_t<Word>;  // wrap-safe: the counter may overflow
    while (Signed(ref.load(cuda::std::memory_order_acquire) - target) < 0) {
    }
  });
}
XB_KERNEL void xbb_rt_counter32(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report) {
  counter_barrier<unsigned>(iters, check, cycles, report);
}
XB_KERNEL void xbb_rt_counter64(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report) {
  counter_barrier<unsigned long long>(iters, check, cycles, report);
}

XB_KERNEL void xbb_rt_syncthreads(unsigned iters, unsigned check, unsigned long long* cycles,
                                  unsigned long long* report) {
  xbb::rt::run(iters, check, cycles, report, [] { __syncthreads(); });
}

#endif  // XB_PLATFORM_CUDA
