// Round trip of one block barrier: `phases` x arrive_and_wait by every thread of the block
// (the host backend's timing of a round trip).
#include "common.hpp"

XB_KERNEL void xbc_round_trip(unsigned phases) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, xbc::block_threads());
  __syncthreads();
  for (unsigned p = 0; p < phases; ++p) bar.arrive_and_wait();
}
