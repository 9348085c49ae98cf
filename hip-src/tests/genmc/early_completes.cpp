// Property: arrivals that land during phase k's completion step and make up all of phase
// k+1 are completed by phase k's completer (its publish finds the word claimed again): the
// step of k+1 runs once, after step k; an early arrive_and_wait returns although R may have
// flipped twice while it waited for the claim to go; an early drop lowers the count from
// k+2 on only. Block scope, or the wide layout of device scope with -DGM_PROTO=gm::device.
// Expected count 2. 3 threads, 2 phases:
//   phase 0: threads 0 and 1 arrive without waiting; its completion step releases 1 and 2;
//   phase 1: thread 2 arrive_and_wait and thread 1 arrive_and_drop, each maybe during
//            step 0; threads 0 and 1 learn from step 1 that phase 1 is claimed and wait
//            for it by parity.
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
    if (k == 0) assert(slot[0][0] == 1 && slot[0][1] == 2);
    else assert(ran[0] == 1 && slot[1][1] == 12 && slot[1][2] == 13);
    steps = k + 1;
    ran[k] = 1;
    __atomic_store_n(&released, k + 1, __ATOMIC_RELEASE);
  }
};
static step completion;

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i < 2) {
    slot[0][i] = i + 1;
    const bool token = gm::proto::arrive(&bar, 1, completion, false);
    assert(token == false);
    if (i == 1) {
      gm::await_at_least(&released, 1);
      slot[1][1] = 12;
      (void)gm::proto::arrive(&bar, 1, completion, true);
    }
    gm::await_at_least(&released, 2);
    gm::proto::wait_parity(&bar, true);  // phase 1, which may still be claimed
    assert(ran[1] == 1 && slot[1][2] == 13);
  } else {
    gm::await_at_least(&released, 1);
    slot[1][2] = 13;
    gm::proto::arrive_and_wait(&bar, completion);
    assert(ran[1] == 1 && slot[1][1] == 12);
  }
  return nullptr;
}

int main() {
  gm::proto::init(&bar, 2);
  gm::run_threads<3>(thread);
  const gm::final_state<gm::proto> f(&bar);
  assert(steps == PHASES);
  assert(f.parity() == bool(PHASES & 1) && f.pending() == 1 && f.expected() == 1 && f.tx() == 0);
  return 0;
}
