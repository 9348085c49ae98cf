// Property: arrive_tx, arrive and complete_tx in every order: the phase completes when its
// last arrival is in and its tx-count is back to exactly 0, whichever operation gets it
// there (an arrival, an arrive_tx, or a complete_tx, also one landing before the arrive_tx
// it pays for, so that the tx-count is negative for a while); the bytes the complete_tx
// paid for (copied with the platform's copy, plain memory) are visible to the completion
// step and to every waiter. Block scope, expected count 2. 3 threads, 1 phase: thread 1
// arrive_tx(1, 4) and waits on its token, thread 2 arrives and waits, thread 0 copies 4
// bytes and complete_tx(4).
#include "platform.hpp"

static uint64_t bar;
static int source = 10;
static int payload;  // written by thread 0's copy before its complete_tx
static int steps;    // completion steps run so far
static int ran;      // set by the step (read by the waiters)

struct step {
  void operator()() {
    assert(payload == 10);
    ++steps;
    ran = 1;
  }
};
static step completion;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    gm::P::copy(&payload, &source, sizeof(int));
    assert(gm::block::tx_update(&bar, 0, -int64_t(sizeof(int)), completion, XB_OP_COMPLETE_TX) == false);
  } else {
    const bool token = i == 1 ? gm::block::tx_update(&bar, 1, sizeof(int), completion, XB_OP_ARRIVE_TX)
                              : gm::block::arrive(&bar, 1, completion, false);
    assert(token == false);
    gm::block::wait_parity(&bar, token);
    assert(ran == 1 && payload == 10);
  }
  return nullptr;
}

int main() {
  gm::block::init(&bar, 2);
  gm::run_threads<3>(thread);
  const gm::final_state<gm::block> f(&bar);
  assert(steps == 1);
  assert(f.parity() == true && f.pending() == 2 && f.expected() == 2 && f.tx() == 0);
  return 0;
}
