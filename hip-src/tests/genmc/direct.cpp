// Property: the direct layouts (no completion function, unchecked builds; device scope, or
// block scope with -DGM_DIRECT=gm::direct_block): exactly one RMW per phase carries into R
// (the last arrival, or an arming RMW when the phase's arrivals all landed before it),
// tokens carry the phase's parity, waiters and arrive_and_wait's completer see every
// arrival's data, and each phase is armed by its first arrival with the count that
// arrival's result holds (a drop counted in the completed phase lowers it, a drop counted
// in the phase itself does not). Expected count 3.
// 3 threads, 2 phases: thread 0 arrive_and_wait, thread 1 arrive + wait on its token,
// thread 2 arrive + wait in phase 0 and drops in phase 1, so the next phase expects 2.
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_device
#endif
using D = GM_DIRECT;
static gm::no_completion none;

constexpr int N = 3, PHASES = 2;
static uint64_t bar;
static int slot[PHASES][N];

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  for (int k = 0; k < PHASES; ++k) {
    slot[k][i] = 10 * k + i + 1;
    if (i == 0) {
      D::arrive_and_wait(&bar, none);
    } else if (i == 2 && k == 1) {
      (void)D::arrive(&bar, 1, none, true);
      return nullptr;
    } else {
      const bool token = D::arrive(&bar, 1, none, false);
      assert(token == bool(k & 1));
      D::wait_parity(&bar, token);
    }
    for (int j = 0; j < N; ++j) assert(slot[k][j] == 10 * k + j + 1);
  }
  return nullptr;
}

int main() {
  D::init(&bar, N);
  gm::run_threads<N>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == bool(PHASES & 1) && f.expected() == 2 && f.pending() == 2);
  return 0;
}
