// Host <-> kernel round trips (bench/src/host_round_trip.rs): one host thread and thread 0 of
// one block meet `phases` times, through a barrier of system scope (SystemBarrier) or through
// a pair of flags in memory both sides reach; and the kernel that a launch-per-phase loop
// launches.
#include "common.hpp"

namespace xbb {
namespace host_rt {
using P = xb::detail::platform;
constexpr auto system_scope = xb::detail::mem_scope::system;
}  // namespace host_rt
}  // namespace xbb

// Thread 0 arrives and waits `phases` times on `bar`, which a host thread also expects.
XB_KERNEL void xbb_host_barrier(xb::barrier<xb::thread_scope_system>* bar, unsigned phases) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  for (unsigned p = 0; p < phases; ++p) bar->arrive_and_wait();
}

// Thread 0 answers `messages` messages: it waits for words[0] == m (the host's flag, an
// acquire load of system scope, polled without sleeping), then stores words[1] = m (release).
XB_KERNEL void xbb_host_flag(unsigned long long* words, unsigned messages) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  using namespace xbb::host_rt;
  uint64_t* w = reinterpret_cast<uint64_t*>(words);
  for (uint64_t m = 1; m <= messages; ++m) {
    uint32_t iteration = 0;
    while (P::load<system_scope>(&w[0], xb::detail::mem_order::acquire) != m) P::backoff(iteration);
    P::store<system_scope>(&w[1], m, xb::detail::mem_order::release);
  }
}

// What a launch per phase launches: one thread bumps a counter.
XB_KERNEL void xbb_host_step(unsigned long long* counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) counter[0] += 1;
}
