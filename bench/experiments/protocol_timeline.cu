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
#define TIMELINE_SITES 14
#define TIMELINE_STEP_FIRST 5
#define TIMELINE_STEP_LAST 6
#include "timeline.hpp"

#define XB_PROTOCOL_TRACE(site) trace(site)
#define XB_PROTOCOL_TRACE_AFTER(site, v) trace_after(site, unsigned(v))
#include <xbarrier/barrier.hpp>

__global__ void round_trips(unsigned warmup) {
  __shared__ xb::barrier<xb::thread_scope_block> bar;
  if (threadIdx.x == 0) {
    s_on = false;
    init(&bar, blockDim.x);
  }
  __syncthreads();
  for (unsigned i = 0; i < warmup + kRounds; ++i) timed_round(i, warmup, [&] { bar.arrive_and_wait(); });
}

int main() {
  const char* const names[kSites] = {"call entered", "fetch_add back", "", "rejoined", "", "step starts",
                                     "publish back", "", "", "", "first poll back", "", "wait over", "call returned"};
  for (unsigned threads : {128u, 1024u}) {
    round_trips<<<1, threads>>>(64);
    if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("launch failed\n"); return 1; }
    if (report(threads, names)) return 1;
  }
  return 0;
}
