// A kernel fed by a host thread: each phase, the host writes a value into memory both sides
// use, arrives and waits on a barrier of system scope; the kernel's threads wait with it,
// add the value to their running sums and write them back for the host, then meet the host
// again before the next value. The Rust side is tests/host_handoff.rs.
#include <xbarrier/barrier.hpp>

XB_KERNEL void host_handoff(xb::barrier<xb::thread_scope_system>* bar, const unsigned* from_host, unsigned* sums,
                            unsigned phases) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned sum = 0;
  for (unsigned p = 0; p < phases; ++p) {
    bar->arrive_and_wait();  // the host's value for phase p is in from_host[0]
    sum += from_host[0] + t;
    sums[t] = sum;
    bar->arrive_and_wait();  // the host reads sums; the next value may follow
  }
}
