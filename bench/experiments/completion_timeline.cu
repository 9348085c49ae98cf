// bench/experiments/completion_timeline.cu - where the native completion engine's round trip
// spends its time, with cheap probes (not part of the build): lane 0 of each warp stores a
// 32-bit clock at each XB_COMPLETION_TRACE site into shared memory (one CS2R and one STS),
// and the lane that runs the step stores its own sites (5-8). completion_trace.cu records
// every thread with counters, which stretched the round several times over.
//   nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=0 -I hip-src/include -o completion_timeline \
//        bench/experiments/completion_timeline.cu
// The finer sites (20-26) need XB_TRACE_AFTER probes in the engine: the `fine` variant of
// completion_variants_s6.sh (session-6 run 6). Without them the macro is unused.
//   ./completion_timeline    (per block size: each site's mean clock after the round's first
//                             call, first and last warp, over 256 timed rounds; `reached`:
//                             the mean share of warps (or of rounds, for the step's sites))
// Sites: 0 call entered (the kernel's loop)  1 arrival made  2 first settle done  5 step
// claimed  6 function ran  7 P published  8 gate given  10 waiting on P  12 wait over
// 13 call returned (the kernel's loop). A site a warp did not reach this round reads 0.
#include <cstdio>
#include <cstdint>

constexpr int kSites = 27, kRounds = 256, kWarps = 32;
__shared__ unsigned s_at[kWarps][kSites];
__shared__ unsigned s_step[kSites];
__shared__ bool s_on;

__device__ __forceinline__ void trace(int site) {
  if (!s_on) return;
  const unsigned now = unsigned(clock());
  if (site >= 5 && site <= 8) s_step[site] = now;
  else if ((threadIdx.x & 31) == 0) s_at[threadIdx.x / 32][site] = now;
}
#define XB_COMPLETION_TRACE(site) trace(site)
// For the finer sites of completion_timeline_sites.py: the clock is read only once `v` is
// available (a branch on it), so the site says when a result came back, not when it was asked.
__device__ __forceinline__ void trace_after(int site, unsigned v) {
  if (v != 0x5a5a5a5bu) trace(site);
}
#define XB_TRACE_AFTER(site, v) trace_after(site, unsigned(v))
#include <xbarrier/barrier.hpp>

__device__ unsigned g_at[kRounds][kWarps][kSites];
__device__ unsigned g_step[kRounds][kSites];

#include "count_steps.hpp"

__global__ void round_trips(unsigned warmup) {
  __shared__ xb::barrier<xb::thread_scope_block, count_steps> bar;
  __shared__ unsigned steps;
  if (threadIdx.x == 0) {
    steps = 0;
    s_on = false;
    init(&bar, blockDim.x, count_steps{&steps});
  }
  __syncthreads();
  for (unsigned i = 0; i < warmup + kRounds; ++i) {
    const bool on = i >= warmup;
    // Clear, switch the probes on or off, and start together (outside the timed call).
    if ((threadIdx.x & 31) == 0)
      for (int s = 0; s < kSites; ++s) s_at[threadIdx.x / 32][s] = 0;
    if (threadIdx.x == 0) {
      for (int s = 0; s < kSites; ++s) s_step[s] = 0;
      s_on = on;
    }
    __syncthreads();
    trace(0);
    bar.arrive_and_wait();
    trace(13);
    __syncthreads();
    if (on) {
      if ((threadIdx.x & 31) == 0)
        for (int s = 0; s < kSites; ++s) g_at[i - warmup][threadIdx.x / 32][s] = s_at[threadIdx.x / 32][s];
      if (threadIdx.x == 0)
        for (int s = 0; s < kSites; ++s) g_step[i - warmup][s] = s_step[s];
    }
  }
  if (threadIdx.x == 0 && steps != warmup + kRounds) printf("wrong step count %u\n", steps);
}

int main() {
  static unsigned at[kRounds][kWarps][kSites], step[kRounds][kSites];
  const char* names[kSites] = {"call entered", "arrival made", "first settle done", "", "", "step claimed",
                               "function ran", "P published", "gate given", "", "waiting on P", "",
                               "wait over", "call returned", "", "", "", "", "", "", "arrive's state back",
                               "test_wait(M) back", "settle: K read", "settle: M tested", "stable d: K read",
                               "stable d: M tested", "stable d: K again"};
  for (unsigned threads : {128u, 1024u}) {
    round_trips<<<1, threads>>>(64);
    if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("launch failed\n"); return 1; }
    cudaMemcpyFromSymbol(at, g_at, sizeof(at));
    cudaMemcpyFromSymbol(step, g_step, sizeof(step));
    const unsigned warps = threads / 32;
    double first[kSites] = {}, last[kSites] = {}, reached[kSites] = {}, rounds_with[kSites] = {};
    for (int r = 0; r < kRounds; ++r) {
      unsigned t0 = at[r][0][0];  // the earliest call (clocks wrap: compare differences)
      for (unsigned w = 1; w < warps; ++w) if (int(at[r][w][0] - t0) < 0) t0 = at[r][w][0];
      for (int s = 0; s < kSites; ++s) {
        if (s >= 5 && s <= 8) {
          if (step[r][s]) { first[s] += step[r][s] - t0; last[s] += step[r][s] - t0; reached[s] += 1; rounds_with[s] += 1; }
          continue;
        }
        unsigned lo = ~0u, hi = 0, n = 0;
        for (unsigned w = 0; w < warps; ++w) {
          if (!at[r][w][s]) continue;
          const unsigned v = at[r][w][s] - t0;
          lo = v < lo ? v : lo;
          hi = v > hi ? v : hi;
          ++n;
        }
        if (n) { first[s] += lo; last[s] += hi; reached[s] += double(n) / warps; rounds_with[s] += 1; }
      }
    }
    std::printf("%u threads, %d rounds: clock after the round's first call (mean), first and last warp\n", threads, kRounds);
    std::printf("  %-20s %10s %10s %14s\n", "site", "first", "last", "reached");
    for (int s = 0; s < kSites; ++s) {
      if (!names[s][0]) continue;
      const double k = rounds_with[s] ? rounds_with[s] : 1;
      std::printf("  %2d %-17s %10.1f %10.1f %14.2f\n", s, names[s], first[s] / k, last[s] / k, reached[s] / kRounds);
    }
  }
  return 0;
}
