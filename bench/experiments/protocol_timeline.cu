// bench/experiments/protocol_timeline.cu - where the emulated variant's round trip (the
// portable protocol, protocol.hpp, on the CUDA platform layer) spends its time, with cheap
// probes; not part of the build. Lane 0 of each warp stores a 32-bit clock at each site into
// shared memory, and the lane that completes the phase stores its own sites (5, 6). A site
// reads the clock only once the result it follows is back (a branch on it).
// The probes sit in a copy of the headers, made by bench/experiments/protocol_variants_s6.sh
// (session-6 runs 14 and 15).
//   ./protocol_timeline      (per block size: each site's mean clock after the round's first
//                             call, first and last warp, over 256 timed rounds; `reached`:
//                             the mean share of warps, or of rounds for the completer's sites)
// Sites: 0 call entered  1 fetch_add result back  5 completer: step starts  6 completer:
// publish result back  3 rejoined  10 first poll back  12 wait over  13 call returned
#include <cstdio>
#include <cstdint>

constexpr int kSites = 14, kRounds = 256, kWarps = 32;
__shared__ unsigned s_at[kWarps][kSites];
__shared__ unsigned s_step[kSites];
__shared__ bool s_on;

__device__ __forceinline__ void trace(int site) {
  if (!s_on) return;
  const unsigned now = unsigned(clock());
  if (site == 5 || site == 6) s_step[site] = now;
  else if ((threadIdx.x & 31) == 0) s_at[threadIdx.x / 32][site] = now;
}
__device__ __forceinline__ void trace_after(int site, unsigned v) {
  if (v != 0x5a5a5a5bu) trace(site);
}
#define XB_PROTOCOL_TRACE(site) trace(site)
#define XB_PROTOCOL_TRACE_AFTER(site, v) trace_after(site, unsigned(v))
#include <xbarrier/barrier.hpp>

__device__ unsigned g_at[kRounds][kWarps][kSites];
__device__ unsigned g_step[kRounds][kSites];

__global__ void round_trips(unsigned warmup) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  if (threadIdx.x == 0) {
    s_on = false;
    init(&bar, blockDim.x);
  }
  __syncthreads();
  for (unsigned i = 0; i < warmup + kRounds; ++i) {
    const bool on = i >= warmup;
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
}

int main() {
  static unsigned at[kRounds][kWarps][kSites], step[kRounds][kSites];
  const char* names[kSites] = {"call entered", "fetch_add back", "", "rejoined", "", "step starts",
                               "publish back", "", "", "", "first poll back", "", "wait over", "call returned"};
  for (unsigned threads : {128u, 1024u}) {
    round_trips<<<1, threads>>>(64);
    if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("launch failed\n"); return 1; }
    cudaMemcpyFromSymbol(at, g_at, sizeof(at));
    cudaMemcpyFromSymbol(step, g_step, sizeof(step));
    const unsigned warps = threads / 32;
    double first[kSites] = {}, last[kSites] = {}, reached[kSites] = {}, rounds_with[kSites] = {};
    for (int r = 0; r < kRounds; ++r) {
      unsigned t0 = at[r][0][0];
      for (unsigned w = 1; w < warps; ++w) if (int(at[r][w][0] - t0) < 0) t0 = at[r][w][0];
      for (int s = 0; s < kSites; ++s) {
        if (s == 5 || s == 6) {
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
  }
  return 0;
}
