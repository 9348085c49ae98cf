// Property: try_wait (test_parity) is false for a phase that cannot be complete yet and,
// once true, its caller sees the phase's data; try_wait_for (wait_parity_for) either times
// out after a bounded number of polls or returns true with the data visible.
// Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device.
// No completion function, expected count 2. 2 threads, 2 phases: thread 0 probes before
// arriving, then spins on try_wait; thread 1 tries try_wait_for with a timeout of 2 (the
// clock counts its own reads: at most 3 polls), then waits.
#include "platform.hpp"

constexpr int N = 2, PHASES = 2;
static uint64_t bar;
static int slot[PHASES][N];
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  for (int k = 0; k < PHASES; ++k) {
    slot[k][i] = 10 * k + i + 1;
    if (i == 0) assert(!gm::proto::test_parity(&bar, bool(k & 1)));  // our arrival is missing
    const bool token = gm::proto::arrive(&bar, 1, none, false);
    assert(token == bool(k & 1));
    if (i == 0) {
      while (!gm::proto::test_parity(&bar, token)) {
      }
    } else if (!gm::proto::wait_parity_for(&bar, token, 2)) {
      gm::proto::wait_parity(&bar, token);
    }
    for (int j = 0; j < N; ++j) assert(slot[k][j] == 10 * k + j + 1);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, N);
  gm::run_threads<N>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(f.parity() == bool(PHASES & 1) && f.pending() == N && f.expected() == N && f.tx() == 0);
  return 0;
}
