// bench/experiments/count_steps.hpp - the completion function of the completion probes:
// it counts the steps (a plain increment; the barrier orders the steps).
#pragma once

struct count_steps {
  unsigned* steps;
  __device__ void operator()() noexcept { ++*steps; }
};
