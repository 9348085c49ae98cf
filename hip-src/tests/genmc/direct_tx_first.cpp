// Property: the direct block layout's first operation of a phase arms it, whether it is an
// arrival's fetch_add or a tx operation's compare-and-swap, exactly once: a tx operation
// that finds an unarmed phase some arrival has reached waits for that arrival's arming,
// one that finds it untouched arms it in its own swap. Tokens name the phase; the bytes a
// complete_tx paid for and every arrival's data are visible to the waiters. Expected
// count 2. 2 threads, 2 phases: thread 0 arrives (fetch_add) and waits on its token;
// thread 1 writes the phase's payload, complete_tx(4), arrive_tx(1, 4) and waits on its
// token. Phase 1 starts unarmed, and either may reach it first.
#include "platform.hpp"

using D = gm::direct_block;
constexpr int PHASES = 2;
static uint64_t bar;
static int payload[PHASES][2];
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  for (int k = 0; k < PHASES; ++k) {
    payload[k][i] = k + 1;
    bool token;
    if (i == 0) {
      token = D::arrive(&bar, 1, none, false);
    } else {
      (void)D::tx_update(&bar, 0, -4, none, XB_OP_COMPLETE_TX);
      token = D::tx_update(&bar, 1, 4, none, XB_OP_ARRIVE_TX);
    }
    assert(token == bool(k & 1));
    D::wait_parity(&bar, token);
    assert(payload[k][1 - i] == k + 1);
  }
  return nullptr;
}

int main() {
  D::init(&bar, 2);
  gm::run_threads<2>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == false && f.pending() == 2 && f.expected() == 2 && f.tx() == 0);
  assert(!D::D::armed(f.s));
  return 0;
}
