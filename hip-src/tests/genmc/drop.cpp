// Property: arrive_and_drop() counts as an arrival of the phase it lands in and lowers the
// expected count from the next phase on (cuda::barrier), also when it lands during the
// previous phase's completion step (it then belongs to the next phase, and lowers the count
// of the one after); a barrier everyone dropped from completes its last phase and stays.
// Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device.
// Expected count 3. 3 threads, 3 phases:
//   phase 0 (3): thread 0 arrives with update 2 and waits, thread 1 drops; the completion
//                step releases thread 2;
//   phase 1 (2): thread 2 drops (maybe during step 0), thread 0 arrives and waits;
//   phase 2 (1): thread 0 drops, completing it alone, and waits by parity.
#include "platform.hpp"

constexpr int PHASES = 3;
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

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) {
    slot[0][0] = 1;
    bool token = gm::proto::arrive(&bar, 2, completion, false);
    assert(token == false);
    gm::proto::wait_parity(&bar, token);
    assert(ran[0] == 1 && slot[0][1] == 2);
    slot[1][0] = 11;
    token = gm::proto::arrive(&bar, 1, completion, false);
    assert(token == true);
    gm::proto::wait_parity(&bar, token);
    assert(ran[1] == 1 && slot[1][2] == 13);
    (void)gm::proto::arrive(&bar, 1, completion, true);
    gm::proto::wait_parity(&bar, false);
    assert(ran[2] == 1);
  } else if (i == 1) {
    slot[0][1] = 2;
    (void)gm::proto::arrive(&bar, 1, completion, true);
  } else {
    gm::await_at_least(&released, 1);
    slot[1][2] = 13;
    (void)gm::proto::arrive(&bar, 1, completion, true);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, 3);
  gm::run_threads<3>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(steps == PHASES);
  assert(f.parity() == bool(PHASES & 1) && f.expected() == 0 && f.pending() == 0 && f.tx() == 0);
  return 0;
}
