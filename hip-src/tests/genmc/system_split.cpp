// Property: the split form of barrier<thread_scope_system> (engine_system.hpp) completes
// phase k only when both sides' shares have: a wait for phase k returns after every arrival
// of both sides, seeing the data each thread of either side wrote before arriving (plain
// memory: a missing happens-before edge is a data race for GenMC); arrive() returns a token
// naming the phase it was counted in (number and parity bit), also the side's completer's.
// Two objects cross-linked as xb_system_split_init links them; no completion function.
// 3 threads, 2 phases: side A (thread 0, expected 1), side B (threads 1 and 2, expected 2).
// Each thread uses arrive_and_wait in one phase and arrive + wait(token) in the other; A
// runs ahead into its share's next phase while B finishes.
#include "system_split.hpp"

constexpr int N = 3, PHASES = 2;
static int slot[PHASES][N];
static gm::share_steps steps_a, steps_b;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  uint64_t* w = i == 0 ? gm::side_a : gm::side_b;
  gm::share_steps& steps = i == 0 ? steps_a : steps_b;
  for (int k = 0; k < PHASES; ++k) {
    slot[k][i] = 10 * k + i + 1;
    if ((k + i) % 2 == 0) {
      gm::sys::arrive_and_wait(w, steps);
    } else {
      const uint64_t token = gm::sys::arrive(w, 1, steps);
      assert(gm::phase_of(token) == uint64_t(k) && gm::parity_of(token) == bool(k & 1));
      gm::sys::wait(w, token);
    }
    for (int j = 0; j < N; ++j) assert(slot[k][j] == 10 * k + j + 1);
  }
  return nullptr;
}

int main() {
  gm::split_init(1, 2);
  gm::run_threads<N>(thread);
  assert(steps_a.n == PHASES && steps_b.n == PHASES);
  assert(gm::side_a[1] == PHASES && gm::side_b[1] == PHASES && gm::slot_a == PHASES && gm::slot_b == PHASES);
  return 0;
}
