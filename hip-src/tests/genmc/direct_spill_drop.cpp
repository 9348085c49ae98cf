// Property: in the direct layouts, an arrive_and_drop lowers the expected count from the
// phase after the one it is counted in, also when it lands while that phase's first
// arrival has not armed it yet (drops are compare-and-swaps that wait for the arming; a
// drop's fetch_add there would lower the count of the phase it spills into). Block scope,
// or the wide layout with -DGM_DIRECT=gm::direct_device. Expected count 2, 3 threads:
//   phase 0: threads 0 and 1 arrive;
//   then, once both have: thread 0 arrives again, thread 1 arrive_and_drops, thread 2
//   arrives. The first two of those make up phase 1, the third is phase 2's. Phase 2
//   expects 1 where the drop came first or second (and completes), 2 where it came third
//   (and stays open with the drop counted).
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static gm::no_completion none;
static int arrived;  // phase 0's arrivals made (atomic)
static bool second[3];  // the parity of thread 0's and thread 2's arrival after phase 0

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i < 2) {
    assert(D::arrive(&bar, 1, none, false) == false);
    __atomic_fetch_add(&arrived, 1, __ATOMIC_RELEASE);
  }
  gm::await_at_least(&arrived, 2);
  if (i == 1) (void)D::arrive(&bar, 1, none, true);
  else second[i] = D::arrive(&bar, 1, none, false);
  return nullptr;
}

int main() {
  D::init(&bar, 2);
  gm::run_threads<3>(thread);
  const gm::final_state<D> f(&bar);
  // Threads 0 and 2 both counted in phase 1: the drop was phase 2's, which stays open.
  const bool drop_last = second[0] && second[2];
  assert(f.parity() == !drop_last && f.expected() == 1 && f.pending() == 1 && f.tx() == 0);
  return 0;
}
