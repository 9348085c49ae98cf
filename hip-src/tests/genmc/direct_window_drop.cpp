// Property: in the direct layouts, a drop (a compare-and-swap that waits for a phase's
// arming) that finds a window of surplus arrivals ends once the window is through, also
// where the arming and the spill flip R an even number of times and leave the word unarmed
// with nothing arrived. Block scope, or the wide layout with -DGM_DIRECT=gm::direct_device.
// Expected count 2, 4 threads, nobody waits on a token:
//   thread 0 arrives with update 2 (all of phase 0), says so, then arrives with 1;
//   threads 1-3, once phase 0 is in, arrive with 1; thread 1 then arrive_and_drops.
// Every order is valid: the five updates of 1 make phases 1 and 2 and one arrival of 3,
// and the drop lowers E to 1 from the phase after its own.
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static gm::no_completion none;
static int started;  // atomic: phase 0 is complete

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    (void)D::arrive(&bar, 2, none, false);
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    (void)D::arrive(&bar, 1, none, false);
  } else {
    gm::await_at_least(&started, 1);
    (void)D::arrive(&bar, 1, none, false);
    if (i == 1) (void)D::arrive(&bar, 1, none, true);
  }
  return nullptr;
}

int main() {
  D::init(&bar, 2);
  gm::run_threads<4>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.tx() == 0);
  return 0;
}
