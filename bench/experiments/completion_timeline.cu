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
#define TIMELINE_SITES 27
#define TIMELINE_STEP_FIRST 5
#define TIMELINE_STEP_LAST 8
#include "timeline.hpp"

#define XB_COMPLETION_TRACE(site) trace(site)
#define XB_TRACE_AFTER(site, v) trace_after(site, unsigned(v))
#include <xbarrier/barrier.hpp>

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
  for (unsigned i = 0; i < warmup + kRounds; ++i) timed_round(i, warmup, [&] { bar.arrive_and_wait(); });
  if (threadIdx.x == 0 && steps != warmup + kRounds) printf("wrong step count %u\n", steps);
}

int main() {
  const char* const names[kSites] = {"call entered", "arrival made", "first settle done", "", "", "step claimed",
                                     "function ran", "P published", "gate given", "", "waiting on P", "",
                                     "wait over", "call returned", "", "", "", "", "", "", "arrive's state back",
                                     "test_wait(M) back", "settle: K read", "settle: M tested", "stable d: K read",
                                     "stable d: M tested", "stable d: K again"};
  for (unsigned threads : {128u, 1024u}) {
    round_trips<<<1, threads>>>(64);
    if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("launch failed\n"); return 1; }
    if (report(threads, names)) return 1;
  }
  return 0;
}
