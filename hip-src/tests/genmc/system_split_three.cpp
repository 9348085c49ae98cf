// Property: in the split form of barrier<thread_scope_system> (engine_system.hpp), a waiter
// sees what every thread of its own side wrote before arriving, also a thread that neither
// it nor the completer is: side B has three threads, so the first one to arrive learns of the
// second's data only through the completer's acquire and its release of C. (With two
// threads a side, the completer's own release before its arrival covers what a waiter
// reads, and a relaxed store of C goes unseen.)
// 4 threads, 1 phase: side A (thread 0, expected 1), side B (threads 1-3, expected 3), each
// thread arrive_and_wait, then reads every thread's data.
#include "system_split.hpp"

constexpr int N = 4;
static int slot[N];
static gm::share_steps steps_a, steps_b;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  slot[i] = i + 1;
  if (i == 0) gm::sys::arrive_and_wait(gm::side_a, steps_a);
  else gm::sys::arrive_and_wait(gm::side_b, steps_b);
  for (int j = 0; j < N; ++j) assert(slot[j] == j + 1);
  return nullptr;
}

int main() {
  gm::split_init(1, 3);
  gm::run_threads<N>(thread);
  assert(steps_a.n == 1 && steps_b.n == 1);
  return 0;
}
