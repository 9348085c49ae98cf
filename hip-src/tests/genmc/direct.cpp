// Property: the direct layout (device scope, no completion function, unchecked builds):
// exactly one RMW per phase carries into R (the last arrival, or the first arrival's arming
// RMW when the others landed before it), tokens carry the phase's parity, waiters and
// arrive_and_wait's completer see every arrival's data, and a drop that is its phase's first
// arrival arms the phase with the count before the drop. Expected count 3. 3 threads,
// 2 phases: thread 0 arrive_and_wait, thread 1 arrive + wait on its token, thread 2
// arrive + wait in phase 0 and drops in phase 1, so the next phase would expect 2.
#include "platform.hpp"

constexpr int N = 3, PHASES = 2;
static uint64_t bar;
static int slot[PHASES][N];

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  for (int k = 0; k < PHASES; ++k) {
    slot[k][i] = 10 * k + i + 1;
    if (i == 0) {
      gm::direct::arrive_and_wait(&bar);
    } else if (i == 2 && k == 1) {
      (void)gm::direct::arrive(&bar, 1, true);
      return nullptr;
    } else {
      const bool token = gm::direct::arrive(&bar, 1, false);
      assert(token == bool(k & 1));
      gm::device::wait_parity(&bar, token);
    }
    for (int j = 0; j < N; ++j) assert(slot[k][j] == 10 * k + j + 1);
  }
  return nullptr;
}

int main() {
  gm::direct::init(&bar, N);
  gm::run_threads<N>(thread);
  const uint64_t s = __atomic_load_n(&bar, __ATOMIC_RELAXED);
  assert(gm::direct::parity(s) == bool(PHASES & 1) && gm::direct::expected_of(s) == 2 &&
         gm::direct::arrivals_of(s) == 0);
  return 0;
}
