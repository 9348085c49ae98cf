// Property: the direct block layout (no completion function, unchecked builds) with the
// tx-count: a phase completes in the one RMW that brings its last arrival in with T at 0,
// whichever operation that is (arrive_tx or complete_tx, also one landing before the
// arrive_tx it pays for, so that T is negative for a while); a tx operation that finds the
// next phase unarmed with nothing arrived arms it in its own compare-and-swap and is
// counted in that phase. The bytes a complete_tx paid for are visible to the waiters.
// (A tx operation racing a first arrival's arming: direct_tx_first.cpp.) Expected count 1. 2 threads,
// 2 phases: thread 0 writes phase k's payload, complete_tx(4) and waits for phase k;
// thread 1 arrive_tx(1, 4) and waits on its token.
#include "platform.hpp"

using D = gm::direct_block;
constexpr int PHASES = 2;
static uint64_t bar;
static int payload[PHASES];
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  for (int k = 0; k < PHASES; ++k) {
    const bool parity = bool(k & 1);
    if (i == 0) {
      payload[k] = 10 + k;
      assert(D::tx_update(&bar, 0, -4, none, XB_OP_COMPLETE_TX) == parity);
      D::wait_parity(&bar, parity);
    } else {
      const bool token = D::tx_update(&bar, 1, 4, none, XB_OP_ARRIVE_TX);
      assert(token == parity);
      D::wait_parity(&bar, token);
      assert(payload[k] == 10 + k);
    }
  }
  return nullptr;
}

int main() {
  D::init(&bar, 1);
  gm::run_threads<2>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == false && f.pending() == 1 && f.expected() == 1 && f.tx() == 0);
  return 0;
}
