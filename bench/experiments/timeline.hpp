// bench/experiments/timeline.hpp - cheap clock probes for one barrier round trip, shared by
// completion_timeline.cu and protocol_timeline.cu. Lane 0 of each warp stores a 32-bit clock
// per site into shared memory (one CS2R and one STS); the sites from TIMELINE_STEP_FIRST to
// TIMELINE_STEP_LAST belong to the one lane that runs the step and are stored by it.
// trace_after() reads the clock only once its value is back (a branch on it), so the site says
// when a result arrived, not when it was asked for. Include it before <xbarrier/barrier.hpp>,
// with TIMELINE_SITES, TIMELINE_STEP_FIRST and TIMELINE_STEP_LAST defined. Site 0 is "call
// entered" and site 13 "call returned", stored by timed_round().
#pragma once
#include <cstdio>
#include <cstdint>

constexpr int kSites = TIMELINE_SITES, kRounds = 256, kWarps = 32;
__shared__ unsigned s_at[kWarps][kSites];
__shared__ unsigned s_step[kSites];
__shared__ bool s_on;
__device__ unsigned g_at[kRounds][kWarps][kSites];
__device__ unsigned g_step[kRounds][kSites];

__host__ __device__ constexpr bool step_site(int site) {
  return site >= TIMELINE_STEP_FIRST && site <= TIMELINE_STEP_LAST;
}

__device__ __forceinline__ void trace(int site) {
  if (!s_on) return;
  const unsigned now = unsigned(clock());
  if (step_site(site)) s_step[site] = now;
  else if ((threadIdx.x & 31) == 0) s_at[threadIdx.x / 32][site] = now;
}
__device__ __forceinline__ void trace_after(int site, unsigned v) {
  if (v != 0x5a5a5a5bu) trace(site);
}

// Round i of a kernel's loop: clear the sites, switch the probes on after `warmup` rounds,
// run `round_trip` between sites 0 and 13, and copy the sites out. Every thread calls it.
template <class RoundTrip>
__device__ void timed_round(unsigned i, unsigned warmup, RoundTrip&& round_trip) {
  const bool on = i >= warmup;
  if ((threadIdx.x & 31) == 0)
    for (int s = 0; s < kSites; ++s) s_at[threadIdx.x / 32][s] = 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kSites; ++s) s_step[s] = 0;
    s_on = on;
  }
  __syncthreads();
  trace(0);
  round_trip();
  trace(13);
  __syncthreads();
  if (on) {
    if ((threadIdx.x & 31) == 0)
      for (int s = 0; s < kSites; ++s) g_at[i - warmup][threadIdx.x / 32][s] = s_at[threadIdx.x / 32][s];
    if (threadIdx.x == 0)
      for (int s = 0; s < kSites; ++s) g_step[i - warmup][s] = s_step[s];
  }
}

// Prints, per named site, its mean clock after the round's first call for the first and the
// last warp, and `reached`: the mean share of warps (of rounds, for the step's sites).
inline int report(unsigned threads, const char* const (&names)[kSites]) {
  static unsigned at[kRounds][kWarps][kSites], step[kRounds][kSites];
  if (cudaMemcpyFromSymbol(at, g_at, sizeof(at)) != cudaSuccess ||
      cudaMemcpyFromSymbol(step, g_step, sizeof(step)) != cudaSuccess) {
    std::printf("reading the probes failed\n");
    return 1;
  }
  const unsigned warps = threads / 32;
  double first[kSites] = {}, last[kSites] = {}, reached[kSites] = {}, rounds_with[kSites] = {};
  for (int r = 0; r < kRounds; ++r) {
    unsigned t0 = at[r][0][0];  // the earliest call (clocks wrap: compare differences)
    for (unsigned w = 1; w < warps; ++w) if (int(at[r][w][0] - t0) < 0) t0 = at[r][w][0];
    for (int s = 0; s < kSites; ++s) {
      if (step_site(s)) {
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
  std::printf("  %-20s %10s %10s %10s\n", "site", "first", "last", "reached");
  for (int s = 0; s < kSites; ++s) {
    if (!names[s][0]) continue;
    const double k = rounds_with[s] ? rounds_with[s] : 1;
    std::printf("  %2d %-17s %10.1f %10.1f %10.2f\n", s, names[s], first[s] / k, last[s] / k, reached[s] / kRounds);
  }
  return 0;
}
