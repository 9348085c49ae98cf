// Kernels on two devices meeting phase after phase (bench/src/multi_gpu.rs): xb's, one grid
// per device at one barrier of system scope in the first device's memory (PeerBarrier), and
// the kernel that the launch-per-phase baselines launch on each device.
#include "common.hpp"

namespace xbb {
namespace multi_gpu {
using P = xb::detail::platform;
constexpr auto system_scope = xb::detail::mem_scope::system;

// What side `side` writes in phase p: unique per phase and side, never 0 (the zeroed inboxes).
XB_INLINE unsigned value(unsigned p, unsigned side) { return 2u * (p + 1u) + side; }
}  // namespace multi_gpu
}  // namespace xbb

// Device `side` (0 or 1) of two runs this grid, the other device the same with 1 - side;
// `phases` times, the participants meet the other device's at `bar`. They are every thread
// (every_thread != 0) or thread 0 of each block between two __syncthreads (a grid barrier
// across both devices), K of them a side, numbered k. In phase p each stores value(p, side)
// into slot (p % 2) * K + k of `out` (the other device's memory) before it arrives, and after
// the wait reads slot (p % 2) * K + (k + p) % K of `in` (its own device's memory, which the
// other side wrote in that phase): anything but value(p, 1 - side) counts into report[0]. The
// halves alternate because the other side may be in phase p + 1 while this one still reads
// phase p; it cannot be in p + 2 before this side has arrived in p + 1. Thread 0 of block 0
// stores in report[1] the nanoseconds (xb::clock_ns) from the start of phase `warmup` to the
// end of the last one.
XB_KERNEL void xbb_multi_gpu_xb(xb::barrier<xb::thread_scope_system>* bar, unsigned* out, const unsigned* in,
                                unsigned long long* report, unsigned phases, unsigned warmup, unsigned side,
                                unsigned every_thread) {
  const bool all = every_thread != 0;
  const unsigned k = all ? blockIdx.x * blockDim.x + threadIdx.x : blockIdx.x;
  const unsigned count = all ? gridDim.x * blockDim.x : gridDim.x;
  const bool participant = all || threadIdx.x == 0;
  const bool timer = blockIdx.x == 0 && threadIdx.x == 0;
  uint64_t start = 0, wrong = 0;
XBB_UNROLL(1)
  for (unsigned p = 0; p < phases; ++p) {
    if (timer && p == warmup) start = xb::clock_ns();
    if (!all) __syncthreads();
    if (participant) {
      const unsigned half = (p % 2) * count;
      out[half + k] = xbb::multi_gpu::value(p, side);
      bar->arrive_and_wait();
      wrong += in[half + (k + p) % count] != xbb::multi_gpu::value(p, 1 - side);
    }
    if (!all) __syncthreads();
  }
  if (timer) report[1] = xb::clock_ns() - start;
  xbb::count(report, wrong);
}

// What the baselines launch on each device in phase p (launch + synchronize, or launches
// ordered by stream events): thread 0 of block 0 reads the other device's counter (`theirs`,
// memory of that device), which must be p or p + 1 (the other device's kernel of phase p - 1
// has ended, and its kernel of phase p + 1 waits for this one), else it counts into
// report[0]; then it sets its own counter (`mine`) to p + 1.
XB_KERNEL void xbb_multi_gpu_step(unsigned long long* mine, const unsigned long long* theirs,
                                  unsigned long long* report, unsigned phase) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  using namespace xbb::multi_gpu;
  const uint64_t seen = P::load<system_scope>(reinterpret_cast<const uint64_t*>(theirs), xbb::relaxed);
  xbb::count(report, seen != phase && seen != phase + 1u);
  P::store<system_scope>(reinterpret_cast<uint64_t*>(mine), uint64_t(phase) + 1u, xbb::relaxed);
}
