// bench/experiments/completion_round_trip.cu - cycles per arrive_and_wait round trip of a
// block barrier with a completion function (the native completion engine on sm_90), not
// part of the build. With completion_variants.patch, which adds XB_EXP switches to
// completion_engine.hpp as it was at commit d4dc534, one binary per variant (from the
// repository root; put the header back with git checkout afterwards):
//   git show d4dc534:hip-src/include/xbarrier/completion_engine.hpp > hip-src/include/xbarrier/completion_engine.hpp
//   git apply bench/experiments/completion_variants.patch
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -DXB_EXP=3 -DEXPNAME='"exp3"' \
//        -I hip-src/include -o ctime3 bench/experiments/completion_round_trip.cu
//   ./ctime3 [blocks]   (one line: the name, the block count (default 1), then cycles at
//                        128, 256 and 1024 threads; with several blocks, the median block's,
//                        as xbar bench reports)
// Without the patch it times the engine in the tree. -DXB_CUDA_RECONVERGE=0 builds the
// session-5 "norec" row. Each block runs 20000 round trips; the last 90 % are timed by
// thread 0's clock.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
// The `fine` variant's probes (completion_variants_s6.sh) record nothing here.
#define XB_TRACE_AFTER(site, v)
#include <xbarrier/barrier.hpp>
#include "count_steps.hpp"
__global__ void rt(unsigned rounds, unsigned long long* cycles_of_block) {
  unsigned long long* cycles = cycles_of_block + blockIdx.x;
  __shared__ xb::barrier<xb::thread_scope_block, count_steps> bar;
  __shared__ unsigned steps;
  if (threadIdx.x == 0) { steps = 0; init(&bar, blockDim.x, count_steps{&steps}); }
  __syncthreads();
  unsigned long long start = 0;
  for (unsigned i = 0; i < rounds; ++i) {
    if (i == rounds / 10) start = clock64();
    bar.arrive_and_wait();
  }
  if (threadIdx.x == 0) { *cycles = clock64() - start; if (steps != rounds) printf("wrong steps\n"); }
}
// Blocks: argv[1] (default 1); with more, the median block's figure (the bench's statistic).
int main(int argc, char** argv) {
  const unsigned rounds = 20000;
  const unsigned blocks = argc > 1 ? unsigned(atoi(argv[1])) : 1;
  unsigned long long* c; cudaMalloc(&c, 8 * blocks);
  unsigned long long* h = new unsigned long long[blocks];
  printf("%-10s %4u blocks", EXPNAME, blocks);
  for (unsigned t : {128u, 256u, 1024u}) {
    rt<<<blocks, t>>>(rounds, c);
    if (cudaDeviceSynchronize() != cudaSuccess) { printf(" fail\n"); return 1; }
    cudaMemcpy(h, c, 8 * blocks, cudaMemcpyDeviceToHost);
    std::sort(h, h + blocks);
    printf(" %9.1f", double(h[blocks / 2]) / (rounds - rounds / 10));
  }
  printf("\n");
}
