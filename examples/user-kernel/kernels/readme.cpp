// kernels/readme.cpp: one tx-count phase, then every thread doubles the tile.
#include <utility>

#include <xbarrier/barrier.hpp>

XB_KERNEL void stream_in(const float* in, float* out, unsigned n) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  float* tile = xb::dynamic_shared<float>();
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  xb::arrival_token token;
  if (threadIdx.x == 0) {
    token = xb::device::barrier_arrive_tx(bar, 1, n * sizeof(float));
    xb::device::memcpy_async_tx(tile, in, xb::aligned_size_t<16>(n * sizeof(float)), bar);
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));   // phase complete: all arrivals in and every byte landed
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) out[i] = 2 * tile[i];
}
