// Property: arrive() returns the parity of the phase it was counted in, and wait() on that
// token returns only after every arrival of the phase, seeing the data each thread wrote
// before arriving (plain memory: a missing happens-before edge is a data race for GenMC).
// No completion function. 3 threads, 2 phases; expected count 4, thread 2 arrives with
// update 2.
// Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device.
#include "platform.hpp"

constexpr int N = 3, PHASES = 2;
static uint64_t bar;
static int slot[PHASES][N];
static gm::no_completion none;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  for (int k = 0; k < PHASES; ++k) {
    slot[k][i] = 10 * k + i + 1;
    const bool token = gm::proto::arrive(&bar, i == 2 ? 2 : 1, none, false);
    assert(token == bool(k & 1));
    gm::proto::wait_parity(&bar, token);
    for (int j = 0; j < N; ++j) assert(slot[k][j] == 10 * k + j + 1);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, 4);
  gm::run_threads<N>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(f.parity() == bool(PHASES & 1) && f.pending() == 4 && f.expected() == 4 && f.tx() == 0);
  return 0;
}
