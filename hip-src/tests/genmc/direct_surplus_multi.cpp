// Property: in the direct layouts, surplus arrivals counted one or two phases after the one
// their atomic found get the tokens of those phases (R flipped once per phase
// ahead), and every phase completes. Block scope, or the wide layout with
// -DGM_DIRECT=gm::direct_device. Expected count 2; 4 threads each arrive with update 2,
// once, without waiting: each arrival is a whole phase, so phases 0-3 complete (phase 0
// armed by init), their parities 0, 1, 0, 1, whatever lands before phase 1's first arrival
// has armed it. Phase 4 is left unarmed with nothing arrived.
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static gm::no_completion none;
static int token[4];

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  token[i] = D::arrive(&bar, 2, none, false);
  return nullptr;
}

int main() {
  D::init(&bar, 2);
  gm::run_threads<4>(thread);
  assert(token[0] + token[1] + token[2] + token[3] == 2);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == false && f.pending() == 2 && f.expected() == 2);
  return 0;
}
