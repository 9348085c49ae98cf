// Kernels on several devices meeting at one barrier of system scope that lives in one
// device's memory (PeerBarrier on the Rust side, conformance/src/cases/multi_gpu.rs), with
// data handed from each device to the next through peer memory.
#include "common.hpp"

using system_barrier = xb::barrier<xb::thread_scope_system>;

namespace xbc {
// What participant `id` (numbered across all devices) writes in phase `p`.
XB_INLINE unsigned peer_value(unsigned p, unsigned id) { return p * 2246822519u ^ (id * 3266489917u + 7u); }
}  // namespace xbc

// Device `side` of `sides` runs this grid; every thread of every device's grid meets the
// others `phases` times (each grid has K threads; participant id = side * K + g). In phase
// p each thread writes its value to slot g of half p % 2 of `out`, memory of the next device
// ((side + 1) % sides), arrives and waits, then checks a slot of `in`, its own device's
// memory, which the previous device's threads wrote in that phase. Phases cycle through the
// ways to wait: arrive_and_wait, a token's wait, and a wait on the parity; odd phases copy
// the value with xb::memcpy_async bound to the barrier. `drop_side` < sides: that device's
// last block leaves with arrive_and_drop in phase `drop_at`, and from then on the next
// device reads only the slots of the blocks that stayed.
XB_KERNEL void xbc_multi_gpu_exchange(system_barrier* bar, unsigned* out, const unsigned* in,
                                      unsigned long long* report, unsigned phases, unsigned side, unsigned sides,
                                      unsigned drop_side, unsigned drop_at) {
  const unsigned k = gridDim.x * xbc::block_threads(), g = xbc::global_thread();
  const bool leaves = side == drop_side && blockIdx.x == gridDim.x - 1;
  const unsigned previous = (side + sides - 1) % sides;
  for (unsigned p = 0; p < phases; ++p) {
    if (leaves && p == drop_at) {
      bar->arrive_and_drop();
      return;
    }
    const unsigned value = xbc::peer_value(p, side * k + g);
    if (p % 2) xb::memcpy_async(&out[k + g], &value, sizeof(unsigned), *bar);
    else out[g] = value;
    switch (p % 3) {
      case 0: bar->arrive_and_wait(); break;
      case 1: bar->wait(bar->arrive()); break;
      default: (void)bar->arrive(); bar->wait_parity(p % 2 != 0); break;
    }
    const unsigned present = k - (previous == drop_side && p >= drop_at ? xbc::block_threads() : 0u);
    const unsigned h = (g * 7 + p) % present;
    xbc::expect_eq(report, p, in[(p % 2) * k + h], xbc::peer_value(p, previous * k + h));
  }
}

// One thread per device, two devices. Side 0 arrives and waits for phase 0 with a timeout
// while side 1 holds its arrival back until side 0 raises `flag` (memory of side 1), which
// side 0 does only once its timed wait has ended: so the timed wait must time out
// (report[0] counts it if not; report[4] gets the nanoseconds it took); then side 0 waits
// on the phase's parity, which side 1's arrival completes.
XB_KERNEL void xbc_multi_gpu_timeout(system_barrier* bar, uint64_t* flag, unsigned long long* report, unsigned side,
                                     unsigned long long timeout_ns) {
  if (xbc::global_thread() != 0) return;
  if (side == 0) {
    const uint64_t start = xb::clock_ns();
    const bool completed = bar->try_wait_for(bar->arrive(), xb::nanoseconds(int64_t(timeout_ns)));
    report[4] = xb::clock_ns() - start;
    xbc::expect_eq(report, 0, completed, 0);
    xb::detail::platform::store<xb::detail::mem_scope::system>(flag, 1, xb::detail::mem_order::release);
    bar->wait_parity(false);
  } else {
    uint32_t iteration = 0;
    while (xb::detail::platform::load<xb::detail::mem_scope::system>(flag, xb::detail::mem_order::acquire) == 0)
      xb::detail::platform::wait_backoff(iteration);
    bar->arrive_and_wait();
  }
}
