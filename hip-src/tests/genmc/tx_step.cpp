// Property: a tx operation that finds the previous phase claimed (its completion step
// running) waits for the publish and is counted in the next phase; an expect_tx counted
// after the complete_tx it expects keeps that phase open until the tx-count is 0 again.
// Block scope, expected count 1. 2 threads, 2 phases:
//   phase 0: thread 1 arrive_and_wait (so it completes the phase); the step releases thread 0;
//   phase 1: thread 0 (maybe during step 0) copies 4 bytes and complete_tx(4); thread 1
//            expect_tx(4), then arrives and waits on its token.
#include "platform.hpp"

constexpr int PHASES = 2;
static uint64_t bar;
static int source = 11;
static int payload;       // written by thread 0's copy before its complete_tx
static int steps;         // completion steps run so far (completers and main)
static int ran[PHASES];   // set by phase k's step (read by phase k's waiters)
static int released;      // phases whose step has run (atomic)

struct step {
  void operator()() {
    const int k = steps;
    if (k == 1) assert(payload == 11);
    steps = k + 1;
    ran[k] = 1;
    __atomic_store_n(&released, k + 1, __ATOMIC_RELEASE);
  }
};
static step completion;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    gm::await_at_least(&released, 1);
    gm::P::copy(&payload, &source, sizeof(int));
    assert(gm::block::tx_update(&bar, 0, -int64_t(sizeof(int)), completion, XB_OP_COMPLETE_TX) == true);
  } else {
    gm::block::arrive_and_wait(&bar, completion);
    assert(ran[0] == 1);
    assert(gm::block::tx_update(&bar, 0, sizeof(int), completion, XB_OP_EXPECT_TX) == true);
    const bool token = gm::block::arrive(&bar, 1, completion, false);
    assert(token == true);
    gm::block::wait_parity(&bar, token);
    assert(ran[1] == 1 && payload == 11);
  }
  return nullptr;
}

int main() {
  gm::block::init(&bar, 1);
  gm::run_threads<2>(thread);
  const gm::final_state<gm::block> f(&bar);
  assert(steps == PHASES);
  assert(f.parity() == bool(PHASES & 1) && f.pending() == 1 && f.expected() == 1 && f.tx() == 0);
  return 0;
}
