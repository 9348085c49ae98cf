// Host threads and kernel threads on one barrier of system scope (SystemBarrier on the Rust
// side, conformance/src/cases/host_threads.rs), with data handed over both ways.
#include "common.hpp"

using system_barrier = xb::barrier<xb::thread_scope_system>;

namespace xbc {
// What participant `slot` writes in phase `p`: differs per phase and participant.
XB_INLINE unsigned exchange_value(unsigned p, unsigned slot) { return p * 2654435761u ^ (slot * 40503u + 1u); }
}  // namespace xbc

// Every thread of the grid and `host_threads` host threads meet `phases` times. In phase p
// each participant writes its slot of half p % 2 of `data` (kernel threads slots 0..K-1 in
// grid order, host threads K..K+H-1; kernel threads copy with xb::memcpy_async in odd
// phases), arrives and waits, then checks a slot of the other side. `drop_side` 1: the last host thread leaves with arrive_and_drop in phase `drop_at`;
// 2: the last block's threads do; 3: every host thread does, and the kernel goes on alone;
// from then on nobody reads the leavers' slots.
XB_KERNEL void xbc_host_threads_exchange(system_barrier* bar, unsigned* data, unsigned long long* report,
                                         unsigned phases, unsigned host_threads, unsigned drop_side, unsigned drop_at) {
  const unsigned k = gridDim.x * xbc::block_threads(), g = xbc::global_thread();
  const unsigned total = k + host_threads;
  const bool leaves = drop_side == 2 && blockIdx.x == gridDim.x - 1;
  for (unsigned p = 0; p < phases; ++p) {
    if (leaves && p == drop_at) {
      bar->arrive_and_drop();
      return;
    }
    // Odd phases hand the value over with memcpy_async bound to the barrier's phase (done
    // before the arrival orders it, on every target: no barrier of system scope takes bulk
    // copies), even phases with a plain store.
    const unsigned value = xbc::exchange_value(p, g);
    if (p % 2) xb::memcpy_async(&data[total + g], &value, sizeof(unsigned), *bar);
    else data[g] = value;
    bar->arrive_and_wait();
    const bool left = p >= drop_at;
    const unsigned hosts = host_threads - (left && drop_side == 1 ? 1u : left && drop_side == 3 ? host_threads : 0u);
    if (hosts == 0) continue;
    const unsigned h = k + (g + p) % hosts;
    xbc::expect_eq(report, p, data[(p % 2) * total + h], xbc::exchange_value(p, h));
  }
}

// Thread 0 of block 0 arrives `arrivals` times on `bar`, one per phase, waiting for each.
XB_KERNEL void xbc_host_threads_arrive(system_barrier* bar, unsigned arrivals) {
  if (xbc::global_thread() != 0) return;
  for (unsigned i = 0; i < arrivals; ++i) bar->arrive_and_wait();
}

// Every thread arrives once; thread 0 first arrives `extra` more times than the phase
// expects (a fault in checked builds), so the phase the host threads wait for never ends.
XB_KERNEL void xbc_host_threads_over_arrive(system_barrier* bar, unsigned extra) {
  if (xbc::global_thread() == 0) (void)bar->arrive(extra);
  bar->arrive_and_wait();
}
