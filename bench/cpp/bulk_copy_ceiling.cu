// bench/cpp/bulk_copy_ceiling.cu - what bulk copies can copy on this GPU: 2 GiB through a
// ring of shared-memory stages (cp.async.bulk global -> shared, completing on an mbarrier,
// then cp.async.bulk shared -> global), in several stage shapes, against cudaMemcpy device
// to device measured beside each shape. It is the ceiling behind the copy benchmark's
// target (>= 0.93x cudaMemcpy; docs/performance.md). Not part of the cargo build: a
// standalone program for sm_90 (CI compiles it; it needs a GPU to run).
//
// Knobs per shape:
//   stage  bytes per stage   stages  ring depth   bps  blocks per SM
//   roles  1: one thread loads and stores (the copy benchmark, hip-src/kernels/bench/copy.cpp:
//          stages-1 loads ahead, a stage is reloaded once the store before it has read it);
//          2: one thread loads, a thread of another warp stores and hands each stage back on
//          an `empty` mbarrier once its store has read it
//   hint   bit 0: loads carry an L2 evict_first policy; bit 1: stores do
// GB/s counts bytes read plus bytes written, as `xbar bench` does; every copy is compared
// with its source. Build and run from the repository root:
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o /tmp/bulk_copy_ceiling \
//        bench/cpp/bulk_copy_ceiling.cu
//   /tmp/bulk_copy_ceiling   (one line per shape: GB/s, cudaMemcpy GB/s, their ratio)
#include <cstdio>
#include <cstdint>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <xbarrier/barrier.hpp>

// The timing: `reps` launches between two events, the first `warmup` untimed, each
// followed by its check; the median GB/s of the rest.
// before(rep) runs ahead of each launch (outside the events), check(rep) after it.
template <class Before, class Launch, class Check>
double median_gbs(double bytes_moved, int reps, int warmup, Before before, Launch launch, Check check) {
  static cudaEvent_t start = nullptr, end = nullptr;
  if (!start && (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess)) {
    std::printf("no events\n");
    std::exit(2);
  }
  std::vector<double> gbs;
  for (int rep = 0; rep < reps; ++rep) {
    before(rep);
    cudaEventRecord(start);
    launch();
    cudaEventRecord(end);
    if (cudaEventSynchronize(end) != cudaSuccess) {
      std::printf("launch failed\n");
      std::exit(1);
    }
    float ms = 0;
    cudaEventElapsedTime(&ms, start, end);
    check(rep);
    if (rep >= warmup) gbs.push_back(bytes_moved / (ms * 1e-3) / 1e9);
  }
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}

constexpr unsigned MAX_STAGES = 16;

struct shape {
  unsigned stage, stages, bps, roles, hint;
};

#if XB_NATIVE_MBARRIER
namespace mb = xb::detail::mbarrier;
__device__ __forceinline__ void load(void* dst, const void* src, uint32_t bytes, uint64_t* bar, bool hint, uint64_t policy) {
  if (!hint) return mb::bulk_load(dst, src, bytes, bar);
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          mb::smem(dst)),
      "l"(src), "r"(bytes), "r"(mb::smem(bar)), "l"(policy)
      : "memory");
}
__device__ __forceinline__ void store(void* dst, const void* src, uint32_t bytes, bool hint, uint64_t policy) {
  if (!hint) return mb::bulk_store(dst, src, bytes);
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;" ::"l"(dst),
               "r"(mb::smem(src)), "r"(bytes), "l"(policy)
               : "memory");
}
#endif

__global__ void copy(const unsigned char* src, unsigned char* dst, uint64_t bytes, shape s) {
#if XB_NATIVE_MBARRIER
  __shared__ uint64_t full[MAX_STAGES], empty[MAX_STAGES];
  extern __shared__ __align__(1024) unsigned char ring[];
  if (threadIdx.x == 0) {
    for (unsigned k = 0; k < s.stages; ++k) {
      mb::init(&full[k], 1);
      mb::init(&empty[k], 1);
    }
    mb::fence_init();
  }
  __syncthreads();
  const uint64_t tiles = (bytes + s.stage - 1) / s.stage;
  const uint64_t owned = tiles > blockIdx.x ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  auto offset = [&](uint64_t j) { return (blockIdx.x + j * gridDim.x) * uint64_t(s.stage); };
  auto size = [&](uint64_t j) { return uint32_t(min(uint64_t(s.stage), bytes - offset(j))); };
  auto at = [&](unsigned k) { return ring + size_t(k) * s.stage; };
  uint64_t policy = 0;
  if (s.hint) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  const bool hl = s.hint & 1, hs = s.hint & 2;
  if (s.roles == 1) {
    if (threadIdx.x != 0) return;
    auto fill = [&](uint64_t j, unsigned k) {
      (void)mb::arrive_expect_tx(&full[k], size(j));
      load(at(k), src + offset(j), size(j), &full[k], hl, policy);
    };
    for (uint64_t j = 0; j < owned && j + 1 < s.stages; ++j) fill(j, unsigned(j));
    unsigned k = 0, parity = 0;
    for (uint64_t j = 0; j < owned; ++j) {
      while (!mb::try_wait_parity(&full[k], parity)) {}
      store(dst + offset(j), at(k), size(j), hs, policy);
      mb::bulk_commit();
      if (j + s.stages - 1 < owned) {
        mb::bulk_wait_read<1>();
        fill(j + s.stages - 1, k == 0 ? s.stages - 1 : k - 1);
      }
      if (++k == s.stages) k = 0, parity ^= 1;
    }
    mb::bulk_wait<0>();
  } else if (threadIdx.x == 0) {  // the loader
    unsigned k = 0, parity = 0;
    for (uint64_t j = 0; j < owned; ++j) {
      if (j >= s.stages) while (!mb::try_wait_parity(&empty[k], parity ^ 1)) {}
      (void)mb::arrive_expect_tx(&full[k], size(j));
      load(at(k), src + offset(j), size(j), &full[k], hl, policy);
      if (++k == s.stages) k = 0, parity ^= 1;
    }
  } else if (threadIdx.x == 32) {  // the storer: stage of tile j-1 goes back once its store read it
    unsigned k = 0, parity = 0, prev = 0;
    for (uint64_t j = 0; j < owned; ++j) {
      while (!mb::try_wait_parity(&full[k], parity)) {}
      store(dst + offset(j), at(k), size(j), hs, policy);
      mb::bulk_commit();
      if (j > 0) {
        mb::bulk_wait_read<1>();
        (void)mb::arrive(&empty[prev], 1);
      }
      prev = k;
      if (++k == s.stages) k = 0, parity ^= 1;
    }
    mb::bulk_wait<0>();
  }
#endif
}

__global__ void differ(const uint4* a, const uint4* b, uint64_t n, unsigned long long* count) {
  unsigned long long c = 0;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    c += (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
  }
  if (c) atomicAdd(count, c);
}

__global__ void fill(uint32_t* data, uint64_t n, uint32_t seed) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    uint64_t z = (i + seed) * 0x9E3779B97F4A7C15ull;
    data[i] = uint32_t(z ^ (z >> 32)) | 1u;
  }
}

int main() {
  const uint64_t bytes = 2ull << 30;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) { std::printf("no device\n"); return 2; }
  unsigned char *src, *dst;
  unsigned long long* count;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess || cudaMalloc(&count, 8) != cudaSuccess) {
    std::printf("no memory\n");
    return 2;
  }
  fill<<<sms * 8, 256>>>(reinterpret_cast<uint32_t*>(src), bytes / 4, 7);
  cudaFuncSetAttribute(copy, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10);
  int wrong = 0, round = 0;
  // Median GB/s of 7 timed launches after 2 untimed ones; every copy compared with its source.
  auto measure = [&](auto launch) {
    ++round;
    return median_gbs(
        2.0 * double(bytes), 9, 2,
        [&](int rep) { cudaMemsetAsync(dst, rep & 0xff, bytes); },  // a stale copy must not pass
        launch,
        [&](int) {
          cudaMemset(count, 0, 8);
          differ<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(src), reinterpret_cast<const uint4*>(dst), bytes / 16, count);
          unsigned long long c = 0;
          cudaMemcpy(&c, count, 8, cudaMemcpyDeviceToHost);
          if (c) ++wrong;
        });
  };
  auto memcpy_gbs = [&] { return measure([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice); }); };
  std::vector<shape> shapes = {
      // stage, stages, bps, roles, hint
      {48 << 10, 4, 2, 1, 0},  // the benchmark's default
      {48 << 10, 4, 2, 1, 1}, {48 << 10, 4, 2, 1, 2}, {48 << 10, 4, 2, 1, 3},
      {48 << 10, 4, 2, 2, 0},  // separate loader and storer
      {48 << 10, 4, 2, 2, 3},
      {32 << 10, 6, 2, 2, 0}, {16 << 10, 12, 2, 2, 0}, {64 << 10, 3, 1, 2, 0}, {32 << 10, 6, 1, 2, 0},
      {16 << 10, 3, 4, 2, 0}, {16 << 10, 3, 4, 1, 0}, {8 << 10, 6, 4, 2, 0}, {96 << 10, 2, 1, 2, 0},
  };
  std::printf("%6s %6s %4s %5s %4s %9s %9s %6s\n", "stage", "stages", "bps", "roles", "hint", "GB/s", "memcpy", "ratio");
  for (const shape& s : shapes) {
    const double before = memcpy_gbs();
    const double got =
        measure([&] { copy<<<sms * s.bps, 64, s.stage * s.stages>>>(src, dst, bytes, s); });
    const double after = memcpy_gbs();
    const double base = (before + after) / 2;
    std::printf("%6u %6u %4u %5u %4u %9.0f %9.0f %6.3f\n", s.stage, s.stages, s.bps, s.roles, s.hint, got, base, got / base);
  }
  std::printf("wrong copies %d of %d launches\n", wrong, round * 9);
  return wrong != 0;
}
