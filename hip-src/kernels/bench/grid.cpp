// Grid-wide barrier: `iters` barriers across a cooperative grid of one block per SM. Per
// barrier a block syncs its threads, thread 0 crosses the grid barrier, the block syncs
// again (what cooperative_groups' grid.sync() does inside).
//
// With `check` set, before each barrier thread 0 of block b publishes the barrier's number
// in state[b] and counts it in state[grid]; after barrier i it must see its neighbour's flag
// at i + 1 or i + 2 and the count within [(i + 1) grid, (i + 2) grid] (nobody can be two
// barriers ahead). Violations count into report[0]. state has grid + 1 zeroed words.
#include "common.hpp"

#if defined(XB_PLATFORM_CUDA)
#include <cooperative_groups.h>
#endif

using grid_barrier = xb::barrier<xb::thread_scope_device>;

// Named, not anonymous: the CUDA build compiles every file as one translation unit.
namespace xbb {
namespace grid {

template <bool Check, class Sync>
XB_INLINE void grid_loop(unsigned iters, unsigned long long* state, unsigned long long* report, Sync&& sync) {
  uint64_t* words = reinterpret_cast<uint64_t*>(state);
  const uint64_t g = gridDim.x;
  uint64_t* mine = words + blockIdx.x;
  uint64_t* next = words + (blockIdx.x + 1) % g;
  uint64_t* counter = words + g;
  unsigned bad = 0;
XBB_UNROLL(1)
  for (unsigned i = 0; i < iters; ++i) {
    const bool leader = Check && threadIdx.x == 0;
    if (leader) {
      xbb::device_ops::store<xbb::device_scope>(mine, i + 1, xbb::relaxed);
      xbb::device_ops::fetch_add<xbb::device_scope>(counter, 1, xbb::relaxed);
    }
    sync();
    if (leader) {
      const uint64_t flag = xbb::device_ops::load<xbb::device_scope>(next, xbb::relaxed);
      const uint64_t count = xbb::device_ops::load<xbb::device_scope>(counter, xbb::relaxed);
      bad += (flag != i + 1 && flag != i + 2) + (count < (i + 1) * g || count > (i + 2) * g);
    }
  }
  if (Check) xbb::count(report, bad);
}

template <class Sync>
XB_INLINE void run(unsigned iters, unsigned check, unsigned long long* state, unsigned long long* report, Sync&& sync) {
  if (check) grid_loop<true>(iters, state, report, sync);
  else grid_loop<false>(iters, state, report, sync);
}

}  // namespace grid
}  // namespace xbb

XB_KERNEL void xbb_grid_init(grid_barrier* bar, unsigned expected) {
  if (blockIdx.x == 0 && threadIdx.x == 0) init(bar, expected);
}

// xb::barrier<thread_scope_device> in global memory, initialized by xbb_grid_init.
XB_KERNEL void xbb_grid_xb(grid_barrier* bar, unsigned iters, unsigned check, unsigned long long* state,
                           unsigned long long* report) {
  xbb::grid::run(iters, check, state, report, [&] {
    __syncthreads();
    if (threadIdx.x == 0) bar->arrive_and_wait();
    __syncthreads();
  });
}

#if defined(XB_PLATFORM_CUDA)

XB_KERNEL void xbb_grid_cg(unsigned iters, unsigned check, unsigned long long* state, unsigned long long* report) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  xbb::grid::run(iters, check, state, report, [&] { grid.sync(); });
}

#endif  // XB_PLATFORM_CUDA
