// clock_conversion.cpp - runs the AMDGPU clock's arithmetic (xbarrier/platform/amdgcn_clock.hpp)
// on the host, so that a test can check it against exact integer math
// (backend-hip/tests/clock.rs builds and runs it).
//
// Reads lines from stdin and answers each with one line on stdout:
//   "default"        -> "<XB_CLOCK_DEFAULT_KHZ> <clock_ns_per_tick_q32(XB_CLOCK_DEFAULT_KHZ)>"
//   "<khz> <ticks>"  -> "<clock_ns_per_tick_q32(khz)> <clock_ticks_to_ns(ticks, that)>"
// Anything else is an error (exit status 2). The header is the one AMDGPU kernels compile:
// on the host compiler only its global is left out.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <xbarrier/platform/amdgcn_clock.hpp>

int main() {
  char line[256];
  while (std::fgets(line, sizeof line, stdin)) {
    if (std::strcmp(line, "default\n") == 0) {
      std::printf("%u %" PRIu64 "\n", XB_CLOCK_DEFAULT_KHZ, xb::detail::clock_ns_per_tick_q32(XB_CLOCK_DEFAULT_KHZ));
      continue;
    }
    uint32_t khz = 0;
    uint64_t ticks = 0;
    if (std::sscanf(line, "%" SCNu32 " %" SCNu64, &khz, &ticks) != 2) {
      std::fprintf(stderr, "clock_conversion: cannot parse %s", line);
      return 2;
    }
    const uint64_t q32 = xb::detail::clock_ns_per_tick_q32(khz);
    std::printf("%" PRIu64 " %" PRIu64 "\n", q32, xb::detail::clock_ticks_to_ns(ticks, q32));
  }
  return 0;
}
