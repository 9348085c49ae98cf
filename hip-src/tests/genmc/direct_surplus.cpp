// Property: in the direct layouts, an arrival counted in a later phase than the one its
// RMW found (a surplus arrival: that phase was not armed yet and held all its arrivals)
// gets the token of the phase it is counted in. Block scope, or the wide layout with
// -DGM_DIRECT=gm::direct_device. Expected count 3, 2 threads, 3 phases:
//   phase 0 (armed by init): thread 0 arrives with update 2, thread 1 with 1; both wait,
//     and each waits for the other to have left the wait (so that no later phase laps it);
//   then thread 0 arrives with update 1, writes `data`, and once thread 1 says `go`,
//     arrives with update 2; thread 1 arrives with update 2 (token t1), then with update 1
//     (token t2), and says `go` (after its test, where it tests).
// Every order of those four arrivals splits them into two whole phases. Thread 1's two
// share a phase only where they make it up alone: then its second completed that phase
// (its first armed it before returning), which must read complete (`go` keeps the next
// from completing before the test).
// Otherwise thread 1's second shares phase 2 with thread 0's second, and a wait on t2 must
// see `data`. The surplus case: thread 0's update 1 is phase 1's first arrival and has not
// armed it when both of thread 1's land; a token naming the phase the RMW found reads as
// "same phase" and the phase as not complete.
#include "platform.hpp"

#ifndef GM_DIRECT
#define GM_DIRECT gm::direct_block
#endif
using D = GM_DIRECT;
static uint64_t bar;
static gm::no_completion none;
static int data;
static int left[2];  // atomic: thread i has left phase 0's wait
static int go;       // atomic: thread 0 may make its last arrival

static void* thread(void* arg) {
  const int i = int(reinterpret_cast<long>(arg));
  if (i == 0) D::wait_parity(&bar, D::arrive(&bar, 2, none, false));
  else D::arrive_and_wait(&bar, none);
  __atomic_store_n(&left[i], 1, __ATOMIC_RELEASE);
  gm::await_at_least(&left[1 - i], 1);
  if (i == 0) {
    (void)D::arrive(&bar, 1, none, false);
    data = 1;
    gm::await_at_least(&go, 1);
    (void)D::arrive(&bar, 2, none, false);
  } else {
    const bool t1 = D::arrive(&bar, 2, none, false);
    const bool t2 = D::arrive(&bar, 1, none, false);
    if (t1 == t2) {
      assert(D::test_parity(&bar, t2));
      __atomic_store_n(&go, 1, __ATOMIC_RELAXED);
    } else {
      __atomic_store_n(&go, 1, __ATOMIC_RELAXED);
      D::wait_parity(&bar, t2);
      assert(data == 1);
    }
  }
  return nullptr;
}

int main() {
  D::init(&bar, 3);
  gm::run_threads<2>(thread);
  const gm::final_state<D> f(&bar);
  assert(f.parity() == true && f.pending() == 3 && f.expected() == 3);
  return 0;
}
