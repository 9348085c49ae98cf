// Property: the completion function runs exactly once per phase, after every arrival of the
// phase (it reads their data) and before any waiter of the phase returns (waiters read what
// it wrote); the completers of different phases are ordered (its counter is plain memory).
// 3 threads, 2 phases, expected count 3: arrive + wait, arrive_and_wait, arrive + wait.
// Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device.
#include "platform.hpp"

constexpr int N = 3, PHASES = 2;
static uint64_t bar;
static int slot[PHASES][N];
static int steps;          // completion steps run so far
static int sum[PHASES];    // written by phase k's step

struct step {
  void operator()() {
    const int k = steps;
    int s = 0;
    for (int j = 0; j < N; ++j) {
      assert(slot[k][j] == 10 * k + j + 1);
      s += slot[k][j];
    }
    sum[k] = s;
    steps = k + 1;
  }
};
static step completion;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  for (int k = 0; k < PHASES; ++k) {
    slot[k][i] = 10 * k + i + 1;
    if (i == 1) {
      gm::proto::arrive_and_wait(&bar, completion);
    } else {
      const bool token = gm::proto::arrive(&bar, 1, completion, false);
      assert(token == bool(k & 1));
      gm::proto::wait_parity(&bar, token);
    }
    assert(steps == k + 1);
    assert(sum[k] == 30 * k + 6);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, N);
  gm::run_threads<N>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(steps == PHASES);
  assert(f.parity() == bool(PHASES & 1) && f.pending() == N && f.expected() == N && f.tx() == 0);
  return 0;
}
