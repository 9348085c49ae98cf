// The block round-trip loop every implementation runs, and xb's own round-trip kernels:
// round_trip.cpp builds them into the bench bundle (release in release builds) beside the
// baselines, and bench_checked/round_trip.cpp into a bundle of checked device code, so that
// one run times checked code against release code.
//
// The loop: `iters` x (every thread arrives, then waits for the phase), one block per SM.
// Thread 0 of each block stores the cycles its loop took in cycles[block]. With `check` set,
// each phase also passes data: thread t writes its slot of one of two buffers before the
// barrier and reads its neighbour's after it; a stale value counts into report[0]. Timed
// runs leave the exchange out (check = 0), so they time the barrier alone. report[1] is set
// when an image lacks an implementation's instructions (raw PTX below sm_90).
//
// Dynamic shared memory: 2 * blockDim.x * 4 bytes (the exchange buffers).
#pragma once
#include "common.hpp"

// Named, not anonymous: the CUDA build compiles every file as one translation unit.
namespace xbb {
namespace rt {

template <bool Check, class Sync>
XB_INLINE void round_trip(unsigned iters, unsigned long long* cycles, unsigned long long* report, Sync&& sync) {
  unsigned* slots = xb::dynamic_shared<unsigned>();
  const unsigned n = blockDim.x, t = threadIdx.x, next = (t + 1) % n;
  unsigned stale = 0;
  const uint64_t start = xbb::cycles();
XBB_UNROLL(1)
  for (unsigned i = 0; i < iters; ++i) {
    unsigned* slot = slots + (i & 1) * n;  // two buffers: a phase never overwrites what the last one reads
    if (Check) slot[t] = i * n + t;
    sync();
    if (Check) stale += slot[next] != i * n + next;
  }
  const uint64_t end = xbb::cycles();
  if (t == 0) cycles[blockIdx.x] = end - start;
  if (Check) xbb::count(report, stale);
}

template <class Sync>
XB_INLINE void run(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report, Sync&& sync) {
  if (check) round_trip<true>(iters, cycles, report, sync);
  else round_trip<false>(iters, cycles, report, sync);
}

}  // namespace rt
}  // namespace xbb

// xb::barrier: the mbarrier hardware in the native CUDA image, the portable protocol in
// the emulated one and on the host.
XB_KERNEL void xbb_rt_xb(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  xbb::rt::run(iters, check, cycles, report, [&] { bar.arrive_and_wait(); });
}

// The same barrier used the way the raw-PTX baseline uses mbarrier: the caller tracks the
// phase parity, so no wait depends on what the arrive returns.
XB_KERNEL void xbb_rt_xb_parity(unsigned iters, unsigned check, unsigned long long* cycles, unsigned long long* report) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  bool parity = false;
  xbb::rt::run(iters, check, cycles, report, [&] {
    (void)bar.arrive();
    bar.wait_parity(parity);
    parity = !parity;
  });
}

// With a completion function that counts the steps (plain increments: the barrier orders
// them); with `check` set, the count must equal the phases.
namespace xbb {
namespace rt {
struct count_steps {
  unsigned* steps;
  XB_INLINE void operator()() noexcept { ++*steps; }
};

// The round trip of a __shared__ barrier with count_steps (xb's or CCCL's: both take init()).
template <class Barrier>
XB_INLINE void with_completion(Barrier& bar, unsigned& steps, unsigned iters, unsigned check,
                               unsigned long long* cycles, unsigned long long* report) {
  if (threadIdx.x == 0) {
    steps = 0;
    init(&bar, blockDim.x, count_steps{&steps});
  }
  __syncthreads();
  run(iters, check, cycles, report, [&] { bar.arrive_and_wait(); });
  if (check && threadIdx.x == 0) xbb::count(report, steps != iters);
}
}  // namespace rt
}  // namespace xbb

XB_KERNEL void xbb_rt_xb_completion(unsigned iters, unsigned check, unsigned long long* cycles,
                                    unsigned long long* report) {
  __shared__ xb::barrier<xb::thread_scope_block, xbb::rt::count_steps> bar;
  __shared__ unsigned steps;
  xbb::rt::with_completion(bar, steps, iters, check, cycles, report);
}

