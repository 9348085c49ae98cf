// Property: in the direct layouts, the next phase's first arrival arms it, and when its
// update is all of the phase, its own arming RMW completes the phase; the phase after is
// left for its own first arrival. Block scope, or the wide layout with
// -DGM_DIRECT=gm::direct_device. Expected count 2.
// 3 threads, 2 phases: threads 0 and 1 arrive once each without waiting (phase 0);
// thread 2 waits for phase 0, then arrives with update 2 (all of phase 1) and waits on its
// token. Phase 2 must end with nothing arrived, unarmed.
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static int slot[2];
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i < 2) {
    slot[i] = i + 1;
    assert(D::arrive(&bar, 1, none, false) == false);
  } else {
    D::wait_parity(&bar, false);
    assert(slot[0] == 1 && slot[1] == 2);
    const bool token = D::arrive(&bar, 2, none, false);
    assert(token == true);
    D::wait_parity(&bar, token);
  }
  return nullptr;
}

int main() {
  D::init(&bar, 2);
  gm::run_threads<3>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == false && f.pending() == 2 && f.expected() == 2);
  assert(!D::D::armed(f.s));
  return 0;
}
