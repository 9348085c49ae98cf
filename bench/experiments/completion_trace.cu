// bench/experiments/completion_trace.cu - a timeline of the native completion engine's
// round trip (completion_engine.hpp), not part of the build. It defines the engine's
// XB_COMPLETION_TRACE probes to record, per thread and round, the clock at each site:
//   1 arrival made         2 first settle done     3 (unused)           5 step claimed
//   6 function ran         7 P published           8 gate given         9 counted during a step
//  10 waiting on P        11 a try_wait on P gave up (counted)          12 wait over
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o completion_trace \
//        bench/experiments/completion_trace.cu
//   ./completion_trace       (per block size: each site's thread count and clock range,
//                             relative to the round's first arrival, averaged over rounds)
#include <cstdio>
#include <cstdint>

constexpr int kSites = 13, kRounds = 64, kMaxThreads = 512;
__device__ unsigned trace_at[kRounds][kMaxThreads][kSites];
__device__ unsigned trace_count[kRounds][kMaxThreads][kSites];
// The round in progress is recorded in shared memory (a global read-modify-write per probe
// would add its latency to every site); each thread copies its row out between rounds.
__shared__ unsigned s_at[kMaxThreads][kSites];
__shared__ unsigned char s_count[kMaxThreads][kSites];
__shared__ bool s_on[kMaxThreads];

__device__ __forceinline__ void trace(int site) {
  if (!s_on[threadIdx.x]) return;
  if (s_count[threadIdx.x][site]++ == 0) s_at[threadIdx.x][site] = unsigned(clock64());
}
#define XB_COMPLETION_TRACE(site) trace(site)
#include <xbarrier/barrier.hpp>

#include "count_steps.hpp"

__global__ void round_trips(unsigned warmup) {
  __shared__ xb::barrier<xb::thread_scope_block, count_steps> bar;
  __shared__ unsigned steps;
  if (threadIdx.x == 0) {
    steps = 0;
    init(&bar, blockDim.x, count_steps{&steps});
  }
  __syncthreads();
  for (int s = 0; s < kSites; ++s) s_count[threadIdx.x][s] = 0;
  for (unsigned i = 0; i < warmup + kRounds; ++i) {
    s_on[threadIdx.x] = i >= warmup;
    bar.arrive_and_wait();
    if (i >= warmup) {
      for (int s = 0; s < kSites; ++s) {
        trace_at[i - warmup][threadIdx.x][s] = s_at[threadIdx.x][s];
        trace_count[i - warmup][threadIdx.x][s] = s_count[threadIdx.x][s];
        s_count[threadIdx.x][s] = 0;
      }
    }
  }
  s_on[threadIdx.x] = false;
  if (threadIdx.x == 0 && steps != warmup + kRounds) printf("wrong step count %u\n", steps);
}

int main() {
  static unsigned at[kRounds][kMaxThreads][kSites];
  static unsigned count[kRounds][kMaxThreads][kSites];
  const char* names[kSites] = {"", "arrived", "settled", "", "", "claimed", "fn ran", "P published",
                               "gate given", "during step", "wait on P", "try_wait gave up", "wait over"};
  for (unsigned threads : {128u, 512u}) {
    round_trips<<<1, threads>>>(200);
    if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("launch failed\n"); return 1; }
    cudaMemcpyFromSymbol(at, trace_at, sizeof(at));
    cudaMemcpyFromSymbol(count, trace_count, sizeof(count));
    double hits[kSites] = {}, lo[kSites] = {}, hi[kSites] = {}, events[kSites] = {};
    int rounds_with[kSites] = {};
    for (int r = 0; r < kRounds; ++r) {
      unsigned t0 = ~0u;
      for (unsigned t = 0; t < threads; ++t) if (count[r][t][1] && at[r][t][1] < t0) t0 = at[r][t][1];
      for (int s = 1; s < kSites; ++s) {
        unsigned long long mn = ~0ull, mx = 0;
        unsigned n = 0;
        for (unsigned t = 0; t < threads; ++t) {
          if (!count[r][t][s]) continue;
          ++n;
          events[s] += count[r][t][s];
          const unsigned long long v = unsigned(at[r][t][s] - t0);
          if (v < mn) mn = v;
          if (v > mx) mx = v;
        }
        hits[s] += n;
        if (n) { lo[s] += double(mn); hi[s] += double(mx); ++rounds_with[s]; }
      }
    }
    std::printf("%u threads, %d rounds (clock cycles after the round's first arrival; means over the rounds with the site)\n", threads, kRounds);
    std::printf("  %-18s %10s %10s %10s %10s %8s\n", "site", "threads", "events", "first", "last", "rounds");
    for (int s = 1; s < kSites; ++s) {
      if (!names[s][0]) continue;
      const double n = rounds_with[s] ? rounds_with[s] : 1;
      std::printf("  %2d %-15s %10.1f %10.1f %10.1f %10.1f %8d\n", s, names[s], hits[s] / kRounds, events[s] / kRounds,
                  lo[s] / n, hi[s] / n, rounds_with[s]);
    }
  }
  return 0;
}
