#include <xbarrier/barrier.hpp>
XB_KERNEL void smoke(unsigned* out, unsigned phases, float scale) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  __shared__ unsigned tile[1024];
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  unsigned sum = 0;
  for (unsigned p = 0; p < phases; ++p) {
    tile[threadIdx.x] = p + threadIdx.x;
    bar.arrive_and_wait();
    sum += tile[(threadIdx.x + 1) % blockDim.x];
    bar.arrive_and_wait();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum + unsigned(scale);
}
