// Message passing through plain memory between two blocks: block 0's thread 0 sends
// `messages` values one at a time (payload, then a release store of the flag), block 1's
// thread 0 takes each (acquire poll of the flag, then the payload) and acknowledges it; each
// side backs off with __nanosleep between polls, as CUDA code does. The hand-off has no
// barrier: on the CPU backend it measures how soon a fiber that polls plain memory runs again.
// cycles[0] is the sender's time for all messages (ns on the host); a payload that does not
// match its message counts into report[0].
//
// words: [0] flag (the last message sent), [1] acknowledgement (the last taken), [2] payload.
#include "common.hpp"

namespace xbb {
namespace mp {
constexpr auto acquire = xb::detail::mem_order::acquire;
constexpr auto release = xb::detail::mem_order::release;

XB_INLINE void wait_for(uint64_t* word, uint64_t value) {
  while (device_ops::load<device_scope>(word, acquire) != value) __nanosleep(100);
}
}  // namespace mp
}  // namespace xbb

XB_KERNEL void xbb_mp(unsigned messages, unsigned long long* words, unsigned long long* cycles,
                      unsigned long long* report) {
  if (threadIdx.x != 0 || blockIdx.x > 1) return;
  uint64_t* w = reinterpret_cast<uint64_t*>(words);
  if (blockIdx.x == 0) {
    const uint64_t start = xbb::cycles();
    for (uint64_t m = 1; m <= messages; ++m) {
      xbb::device_ops::store<xbb::device_scope>(&w[2], m * 3 + 1, xbb::relaxed);
      xbb::device_ops::store<xbb::device_scope>(&w[0], m, xbb::mp::release);
      xbb::mp::wait_for(&w[1], m);
    }
    cycles[0] = xbb::cycles() - start;
  } else {
    uint64_t wrong = 0;
    for (uint64_t m = 1; m <= messages; ++m) {
      xbb::mp::wait_for(&w[0], m);
      wrong += xbb::device_ops::load<xbb::device_scope>(&w[2], xbb::relaxed) != m * 3 + 1;
      xbb::device_ops::store<xbb::device_scope>(&w[1], m, xbb::mp::release);
    }
    xbb::count(report, wrong);
  }
}
