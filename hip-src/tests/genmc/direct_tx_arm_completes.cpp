// Property: in the direct block layout a tx operation whose compare-and-swap arms an
// untouched phase and brings in all of its arrivals completes it in that one swap, with the
// count as a drop counted in the phase before lowered it; the phase hands the dropper's
// data over. Expected count 2. 2 threads, 2 phases: thread 0 writes its data and drops in
// phase 0; thread 1 arrive_tx(1, 0) in phase 0, waits, reads thread 0's data, and
// arrive_tx(1, 0) in phase 1, which then expects it alone.
#include "platform.hpp"

using D = gm::direct_block;
static uint64_t bar;
static int dropped;
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    dropped = 7;
    (void)D::arrive(&bar, 1, none, true);
    return nullptr;
  }
  for (int k = 0; k < 2; ++k) {
    const bool token = D::tx_update(&bar, 1, 0, none, XB_OP_ARRIVE_TX);
    assert(token == bool(k & 1));
    D::wait_parity(&bar, token);
    assert(dropped == 7);
  }
  return nullptr;
}

int main() {
  D::init(&bar, 2);
  gm::run_threads<2>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == false && f.expected() == 1 && f.pending() == 1 && f.tx() == 0);
  assert(!D::D::armed(f.s));
  return 0;
}
