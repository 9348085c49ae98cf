// A device-scope barrier across all blocks of a (cooperative) grid.
#include "common.hpp"

using grid_barrier = xb::barrier<xb::thread_scope_device>;

XB_KERNEL void xbc_grid_init(grid_barrier* bar, unsigned expected) {
  if (xbc::global_thread() == 0) init(bar, expected);
}

// mode 0: thread 0 of each block arrives for its block (expected = blocks);
// mode 1: every thread arrives (expected = all threads);
// mode 2: as 1, and in round p every thread with g % phases == p drops out in the round's
//         first phase (writing its data first), so the expected count falls round by round
//         until the last drops complete the last phase with nobody left.
XB_KERNEL void xbc_grid_barrier(grid_barrier* bar, unsigned* data, unsigned long long* report, unsigned phases, unsigned mode) {
  const unsigned n = xbc::block_threads(), total = gridDim.x * n, g = xbc::global_thread();
  auto grid_sync = [&] {
    if (mode != 0) {
      bar->arrive_and_wait();
    } else {
      __syncthreads();
      if (threadIdx.x == 0) bar->arrive_and_wait();
      __syncthreads();
    }
  };
  for (unsigned p = 0; p < phases; ++p) {
    data[g] = p * 7 + g;
    if (mode == 2 && g % phases == p) {
      bar->arrive_and_drop();
      return;
    }
    grid_sync();
    const unsigned other = (g + n * (p + 1) + p) % total;  // another block's thread, changing each phase
    // In mode 2 a thread that dropped out before this round wrote nothing for it.
    if (mode != 2 || other % phases >= p) xbc::expect_eq(report, p, data[other], p * 7 + other);
    grid_sync();
  }
}
