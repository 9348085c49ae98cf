// A user kernel: each block sums its slice of `in` through a two-stage ring in shared
// memory. Thread 0 streams tiles in with memcpy_async_tx, announcing the bytes with
// barrier_arrive_tx on the stage's "full" barrier; all threads add up the tile and release
// the stage on its "empty" barrier. The same source runs on every xbarrier backend.
#include <xbarrier/barrier.hpp>

constexpr unsigned kStages = 2;

XB_KERNEL void tiled_sum(const float* in, unsigned tiles_per_block, unsigned tile_floats, double* block_sums) {
  __shared__ xb::barrier<xb::thread_scope_block> full[kStages], empty[kStages];
  __shared__ double partial[1024];
  float* ring = xb::dynamic_shared<float>();  // kStages * tile_floats
  const unsigned t = threadIdx.x, n = blockDim.x;
  if (t == 0) {
    for (unsigned s = 0; s < kStages; ++s) {
      init(&full[s], n);  // thread 0 arrives with its tx, the others plainly
      init(&empty[s], n);
    }
  }
  __syncthreads();

  const float* mine = in + size_t(blockIdx.x) * tiles_per_block * tile_floats;
  const unsigned bytes = tile_floats * sizeof(float);
  double sum = 0;
  for (unsigned i = 0; i < tiles_per_block; ++i) {
    const unsigned s = i % kStages;
    if (i >= kStages) empty[s].wait_parity(((i / kStages) - 1) & 1);  // the stage was released
    xb::arrival_token token;
    if (t == 0) {
      token = xb::device::barrier_arrive_tx(full[s], 1, bytes);
      xb::device::memcpy_async_tx(ring + s * tile_floats, mine + size_t(i) * tile_floats, xb::aligned_size_t<16>(bytes), full[s]);
    } else {
      token = full[s].arrive();
    }
    full[s].wait(static_cast<xb::arrival_token&&>(token));
    for (unsigned k = t; k < tile_floats; k += n) sum += ring[s * tile_floats + k];
    (void)empty[s].arrive();
  }
  partial[t] = sum;
  __syncthreads();
  if (t == 0) {
    double total = 0;
    for (unsigned k = 0; k < n; ++k) total += partial[k];
    block_sums[blockIdx.x] = total;
  }
}
