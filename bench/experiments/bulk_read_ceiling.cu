// bench/experiments/bulk_read_ceiling.cu - a hardware probe, not part of the build: how fast
// bulk copies (cp.async.bulk into a ring of shared stages, full/empty mbarriers) can read
// 2 GiB on this GPU, and what in the reduction pipeline's shape moves that figure. The
// pipeline is the benchmark's raw-PTX one (hip-src/kernels/bench/reduce.cpp) with knobs:
//   stage  bytes per stage        stages   ring depth       bps  blocks per SM
//   warps  consumer warps         split    bulk copies per stage (one tx-count)
//   consume 0: consumers only wait and arrive (the copy engine's ceiling), 1: they add
//   hint   1: copies carry an L2 evict_first policy
//   order  0: block b reads tiles b, b + grid, ... (the benchmark) 1: one contiguous chunk
//   skew   bytes the ring starts past a 1024-byte boundary (the benchmark's ring used to
//          start 16-byte aligned only, after its static shared variables)
// against a plain grid-stride kernel (16-byte loads, 8 x 256 threads per SM) in the same
// process. Every timed launch's sum is checked.
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o bulk_read_ceiling \
//        bench/experiments/bulk_read_ceiling.cu
//   ./bulk_read_ceiling            (GB/s, median of 9 launches, per configuration)
#include <algorithm>
#include <cstdio>
#include <cstdint>

#include <xbarrier/barrier.hpp>

#include "median_gbs.hpp"

constexpr unsigned MAX_STAGES = 16;

struct shape {
  unsigned stage, stages, bps, warps, split, consume, hint, order, skew;
};

__device__ __forceinline__ uint32_t pattern(uint64_t i) {
  uint64_t z = (i + 0x5eed) * 0x9E3779B97F4A7C15ull;
  z ^= z >> 32;
  return uint32_t(z) | 1u;
}

__global__ void fill(uint32_t* data, uint64_t n) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    data[i] = pattern(i);
}

__device__ __forceinline__ uint64_t sum4(uint4 v) { return uint64_t(v.x) + v.y + v.z + v.w; }

// One global atomic per warp: one per thread (tens of thousands on one word when every
// block ends at once) serializes in L2 for a visible part of a launch.
__device__ __forceinline__ void add_total(unsigned long long* total, uint64_t sum) {
  for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d);
  if ((threadIdx.x & 31) == 0 && sum) atomicAdd(total, (unsigned long long)sum);
}

#if XB_NATIVE_MBARRIER
namespace mb = xb::detail::mbarrier;
__device__ __forceinline__ void bulk_load_hint(void* dst, const void* src, uint32_t bytes, uint64_t* bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          mb::smem(dst)),
      "l"(src), "r"(bytes), "r"(mb::smem(bar)), "l"(policy)
      : "memory");
}
#endif

__global__ void pipeline(const unsigned char* data, uint64_t bytes, shape s, unsigned long long* total) {
#if XB_NATIVE_MBARRIER
  __shared__ uint64_t full[MAX_STAGES], empty[MAX_STAGES];
  extern __shared__ __align__(1024) unsigned char base[];
  unsigned char* ring = base + s.skew;
  const unsigned consumers = blockDim.x - 32;
  if (threadIdx.x == 0) {
    for (unsigned k = 0; k < s.stages; ++k) {
      mb::init(&full[k], 1);
      mb::init(&empty[k], consumers / 32);
    }
    mb::fence_init();
  }
  __syncthreads();
  const uint64_t tiles = (bytes + s.stage - 1) / s.stage;  // the last one may be short
  auto size = [&](uint64_t t) { return uint32_t(min(uint64_t(s.stage), bytes - t * s.stage)); };
  const uint64_t per = (tiles + gridDim.x - 1) / gridDim.x;
  const uint64_t owned = s.order == 0 ? (tiles > blockIdx.x ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0)
                                      : (min(tiles, per * (blockIdx.x + 1)) - min(tiles, per * blockIdx.x));
  auto tile = [&](uint64_t j) { return s.order == 0 ? blockIdx.x + j * gridDim.x : per * blockIdx.x + j; };
  if (threadIdx.x == 0) {
    uint64_t policy = 0;
    if (s.hint) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    unsigned k = 0, parity = 0;
    const uint32_t piece = s.stage / s.split;
    for (uint64_t j = 0; j < owned; ++j) {
      if (j >= s.stages) while (!mb::try_wait_parity(&empty[k], parity ^ 1)) {}
      const uint32_t n = size(tile(j));
      (void)mb::arrive_expect_tx(&full[k], n);
      const unsigned char* src = data + tile(j) * s.stage;
      unsigned char* dst = ring + size_t(k) * s.stage;
      if (n < s.stage) mb::bulk_load(dst, src, n, &full[k]);  // a short last tile: one copy
      else for (unsigned p = 0; p < s.split; ++p) {
        if (s.hint) bulk_load_hint(dst + p * piece, src + p * piece, piece, &full[k], policy);
        else mb::bulk_load(dst + p * piece, src + p * piece, piece, &full[k]);
      }
      if (++k == s.stages) k = 0, parity ^= 1;
    }
  } else if (threadIdx.x >= 32) {
    const unsigned c = threadIdx.x - 32;
    uint64_t sum = 0;
    unsigned k = 0, parity = 0;
    for (uint64_t j = 0; j < owned; ++j) {
      while (!mb::try_wait_parity(&full[k], parity)) {}
      if (s.consume) {
        const uint4* v = reinterpret_cast<const uint4*>(ring + size_t(k) * s.stage);
#pragma unroll 4
        for (uint32_t q = c; q < size(tile(j)) / 16; q += consumers) sum += sum4(v[q]);
      }
      __syncwarp();
      if ((threadIdx.x & 31) == 0) (void)mb::arrive(&empty[k], 1);
      if (++k == s.stages) k = 0, parity ^= 1;
    }
    add_total(total, sum);
  }
#endif
}

__global__ void grid_stride(const uint4* data, uint64_t vectors, unsigned long long* total) {
  uint64_t sum = 0;
#pragma unroll 4
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors; i += uint64_t(gridDim.x) * blockDim.x)
    sum += sum4(data[i]);
  add_total(total, sum);
}

int main() {
  const uint64_t bytes = 2ull << 30, n = bytes / 4;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) { std::printf("no device\n"); return 2; }
  unsigned char* data;
  unsigned long long* total;
  if (cudaMalloc(&data, bytes) != cudaSuccess || cudaMalloc(&total, 8) != cudaSuccess) { std::printf("no memory\n"); return 2; }
  fill<<<sms * 8, 256>>>(reinterpret_cast<uint32_t*>(data), n);
  cudaFuncSetAttribute(pipeline, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10);
  // The exact sum, once, by the grid-stride kernel (checked against the pipelines and itself).
  cudaMemset(total, 0, 8);
  grid_stride<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(data), bytes / 16, total);
  unsigned long long expected = 0;
  if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("fill failed\n"); return 1; }
  cudaMemcpy(&expected, total, 8, cudaMemcpyDeviceToHost);
  int wrong = 0;
  // Median GB/s of 9 timed launches after 2 untimed ones; `check` compares every sum.
  auto measure = [&](auto launch, bool check) {
    return median_gbs(
        double(bytes), 11, 2, [&](int) { cudaMemset(total, 0, 8); }, launch,
        [&](int) {
          unsigned long long got = 0;
          cudaMemcpy(&got, total, 8, cudaMemcpyDeviceToHost);
          if (check && got != expected) ++wrong;
        });
  };
  auto plain = [&] { return measure([&] { grid_stride<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(data), bytes / 16, total); }, true); };
  std::vector<shape> shapes = {
      // stage, stages, bps, warps, split, consume, hint, order
      {16 << 10, 6, 2, 4, 1, 1, 0, 0, 0},  // the benchmark's default
      {16 << 10, 6, 2, 4, 1, 0, 0, 0, 0},  // copy engine alone
      {16 << 10, 6, 2, 4, 1, 1, 1, 0, 0},  // evict_first
      {16 << 10, 6, 2, 4, 1, 1, 0, 1, 0},  // contiguous chunks
      {16 << 10, 6, 2, 4, 2, 1, 0, 0, 0},  // split 2
      {16 << 10, 6, 2, 4, 4, 1, 0, 0, 0},  // split 4
      {16 << 10, 6, 2, 4, 16, 1, 0, 0, 0},  // split 16 (1 KiB copies)
      {16 << 10, 6, 2, 8, 1, 1, 0, 0, 0},  // 8 consumer warps
      {8 << 10, 8, 3, 4, 1, 1, 0, 0, 0},    // 3 blocks per SM
      {8 << 10, 6, 4, 2, 1, 1, 0, 0, 0},    // 4 blocks per SM
      {4 << 10, 12, 4, 2, 1, 1, 0, 0, 0},   // 4 KiB stages
      {32 << 10, 3, 2, 4, 1, 1, 0, 0, 0},
      {64 << 10, 3, 1, 8, 1, 1, 0, 0, 0},
      {64 << 10, 3, 1, 8, 1, 0, 0, 0, 0},
      {16 << 10, 12, 1, 8, 1, 1, 0, 0, 0},
      {16 << 10, 4, 2, 4, 1, 1, 0, 0, 0},
      {16 << 10, 2, 2, 4, 1, 1, 0, 0, 0},
      {16 << 10, 6, 2, 4, 4, 1, 1, 0, 0},
      {16 << 10, 6, 2, 4, 1, 1, 0, 0, 16},   // the benchmark's old alignment
      {16 << 10, 6, 2, 4, 1, 1, 0, 0, 64},
      {16 << 10, 6, 2, 4, 1, 1, 0, 0, 128},
      {16 << 10, 6, 2, 4, 1, 0, 0, 0, 16},   // copy engine alone, misaligned
      {48 << 10, 4, 1, 4, 1, 1, 0, 0, 16},
      {48 << 10, 4, 1, 4, 1, 1, 0, 0, 0},
  };
  std::printf("%6s %6s %4s %5s %5s %7s %4s %5s %5s %9s %9s %6s\n", "stage", "stages", "bps", "warps", "split", "consume",
              "hint", "order", "skew", "GB/s", "plain", "ratio");
  double best = 0;
  for (const shape& s : shapes) {
    const unsigned smem = s.stage * s.stages + s.skew;
    const double before = plain();
    const double got = measure([&] { pipeline<<<sms * s.bps, 32 * (1 + s.warps), smem>>>(data, bytes, s, total); }, s.consume != 0);
    const double after = plain();
    const double base = (before + after) / 2;
    if (s.consume) best = std::max(best, got);
    std::printf("%6u %6u %4u %5u %5u %7u %4u %5u %5u %9.0f %9.0f %6.3f\n", s.stage, s.stages, s.bps, s.warps, s.split,
                s.consume, s.hint, s.order, s.skew, got, base, got / base);
  }
  std::printf("best consuming pipeline %.0f GB/s; wrong sums %d\n", best, wrong);
  return wrong != 0;
}
