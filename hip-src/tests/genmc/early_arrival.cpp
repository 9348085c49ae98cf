// Property: an arrival that lands while the previous phase's completion step runs (the
// claimed, unpublished state) is counted in the next phase: its token has that phase's
// parity, and a wait on it returns only after that phase (not at the publish of the phase
// before, whose R has the token's parity until then).
// Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device.
// Expected count 2. 3 threads, 2 phases:
//   phase 0: thread 0 arrive_and_wait, thread 1 arrives without waiting; its completion
//            step releases thread 2;
//   phase 1: thread 2 (maybe during step 0) arrives and waits on its token; thread 0
//            arrive_and_wait.
#include "platform.hpp"

constexpr int PHASES = 2;
static uint64_t bar;
static int slot[PHASES][3];  // what each arriver of phase k wrote before arriving
static int steps;            // completion steps run so far (completers and main)
static int ran[PHASES];      // set by phase k's step (read by phase k's waiters)
static int released;         // phases whose step has run (atomic)

struct step {
  void operator()() {
    const int k = steps;
    steps = k + 1;
    ran[k] = 1;
    __atomic_store_n(&released, k + 1, __ATOMIC_RELEASE);
  }
};
static step completion;

static void check(int k, int a, int b) {
  assert(ran[k] == 1);
  assert(slot[k][a] == 10 * k + a + 1);
  assert(slot[k][b] == 10 * k + b + 1);
}

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    slot[0][0] = 1;
    gm::proto::arrive_and_wait(&bar, completion);
    check(0, 0, 1);
    slot[1][0] = 11;
    gm::proto::arrive_and_wait(&bar, completion);
    check(1, 0, 2);
  } else if (i == 1) {
    // No wait: a waiter of phase 0 that sits out phase 1 could see R flip twice (a token
    // two phases old is undefined, as for cuda::barrier).
    slot[0][1] = 2;
    assert(gm::proto::arrive(&bar, 1, completion, false) == false);
  } else {
    gm::await_at_least(&released, 1);
    slot[1][2] = 13;
    const bool token = gm::proto::arrive(&bar, 1, completion, false);
    assert(token == true);
    gm::proto::wait_parity(&bar, token);
    check(1, 0, 2);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, 2);
  gm::run_threads<3>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(steps == PHASES);
  assert(f.parity() == bool(PHASES & 1) && f.pending() == 2 && f.expected() == 2 && f.tx() == 0);
  return 0;
}
