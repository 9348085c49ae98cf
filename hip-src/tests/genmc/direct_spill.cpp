// Property: in the direct layouts, arrivals that land before a phase's first arrival has
// armed it, more of them than the phase expects, are counted in the next phase, which
// completes once they make it up (the arming that carries with arrivals left over arms the
// next phase as well). Block scope, or the wide layout with -DGM_DIRECT=gm::direct_device.
// Expected count 1; 3 threads each arrive once without waiting (a wait could be lapped
// twice, which is undefined): phases 0, 1 and 2 complete, and phase 3 is unarmed with
// nothing arrived. Phase 0 is armed by init, so the window is phase 1's: one thread's
// arrival is its first, another's lands before that one's arming.
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static gm::no_completion none;

static void* thread(void*) {
  (void)D::arrive(&bar, 1, none, false);
  return nullptr;
}

int main() {
  D::init(&bar, 1);
  gm::run_threads<3>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == true && f.pending() == 1 && f.expected() == 1 && f.tx() == 0);
  return 0;
}
