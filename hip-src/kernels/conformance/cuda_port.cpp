// A kernel written for CUDA against <cuda/barrier> (cuda::barrier, cuda::thread_scope_block,
// cuda::device::barrier_arrive_tx / barrier_expect_tx, cuda::memcpy_async), compiled
// unchanged for the host backend and AMD GPUs through xbarrier/cuda_compat.hpp. Only the
// include line differs from the CUDA original. Under nvcc the header is CCCL, whose tx
// functions need sm_90, so the CUDA build (which has an sm_80 pass) leaves this kernel out.
#include <xbarrier/cuda_compat.hpp>

#include "common.hpp"  // the suite's error reporting (xbc::expect_eq)

#if !defined(XB_PLATFORM_CUDA)

// Even rounds: thread 0 raises the tx-count by the tile's size, arrives and bulk-copies the
// tile (memcpy_async_tx); thread 1 adds a zero expectation. Odd rounds: thread 0 binds a
// cuda::memcpy_async of the tile to the phase. Everyone then waits and checks the tile.
XB_KERNEL void xbc_cuda_port(const unsigned* src, unsigned long long* report, unsigned words, unsigned rounds) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  unsigned* tile = xb::dynamic_shared<unsigned>();
  const unsigned n = blockDim.x, t = threadIdx.x;
  if (t == 0) init(&bar, n);
  __syncthreads();
  const unsigned bytes = words * sizeof(unsigned);
  for (unsigned r = 0; r < rounds; ++r) {
    const unsigned* from = src + 4 * r;  // 16-byte aligned
    cuda::barrier<cuda::thread_scope_block>::arrival_token token;
    if (r % 2 == 0 && t == 0) {
      token = cuda::device::barrier_arrive_tx(bar, 1, bytes);
      cuda::device::memcpy_async_tx(tile, from, cuda::aligned_size_t<16>(bytes), bar);
    } else {
      if (r % 2 == 0 && t == 1) cuda::device::barrier_expect_tx(bar, 0);  // changes nothing
      if (r % 2 == 1 && t == 0) cuda::memcpy_async(tile, from, cuda::aligned_size_t<16>(bytes), bar);
      token = bar.arrive();
    }
    bar.wait(cuda::std::move(token));
    for (unsigned w = t; w < words; w += n) xbc::expect_eq(report, r * 1000000ull + w, tile[w], from[w]);
    bar.arrive_and_wait();
  }
}

#endif
