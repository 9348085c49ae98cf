// bench/experiments/median_gbs.hpp - the probes' timing: `reps` launches between two events,
// the first `warmup` untimed, each followed by its check; the median GB/s of the rest.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

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
