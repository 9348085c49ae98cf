// Property: a complete_tx may land before the expect_tx it pays for, and the phase is not
// complete while its tx-count is negative, even with every arrival in (pending 0 and tx -4
// is not complete); the expect_tx that brings it back to 0 completes the phase itself. The
// bytes are visible to every waiter. Block scope, no completion function, expected count 1.
// 3 threads, 1 phase: thread 0 writes the payload, complete_tx(4), then lets thread 2 arrive
// (so the arrival always finds tx -4 or 0); thread 1 expect_tx(4) and waits by parity.
#include "platform.hpp"

static uint64_t bar;
static int payload;
static int landed;  // thread 0's complete_tx is in (atomic)
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    payload = 42;
    assert(gm::proto::tx_update(&bar, 0, -4, none, XB_OP_COMPLETE_TX) == false);
    __atomic_store_n(&landed, 1, __ATOMIC_RELEASE);
  } else if (i == 1) {
    assert(gm::proto::tx_update(&bar, 0, 4, none, XB_OP_EXPECT_TX) == false);
    gm::proto::wait_parity(&bar, false);
    assert(payload == 42);
  } else {
    gm::await_at_least(&landed, 1);
    const bool token = gm::proto::arrive(&bar, 1, none, false);
    assert(token == false);
    gm::proto::wait_parity(&bar, token);
    assert(payload == 42);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, 1);
  gm::run_threads<3>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(f.parity() == true && f.pending() == 1 && f.expected() == 1 && f.tx() == 0);
  return 0;
}
