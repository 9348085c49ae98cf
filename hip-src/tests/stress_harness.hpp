// stress_harness.hpp - what the randomized stress tests (protocol_stress.cpp,
// split_stress.cpp) share: the monotonic clock they time rounds with; the seeded generator
// their plans come from (splitmix64), so that a seed fixes a run on every machine; the replay
// lines a failure, a fault's abort() or a watchdog prints; and the watchdog that fails a round
// which hangs inside a barrier's own (unbounded) waits.
#pragma once
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() { return mix(s += 0x9e3779b97f4a7c15ull); }
  uint32_t below(uint32_t n) { return n ? uint32_t(next() % n) : 0; }
  bool chance(uint32_t num, uint32_t den) { return below(den) < num; }
};

// The program's name (the prefix of its messages) and the run's seed; main sets them.
const char* g_program = "stress";
uint64_t g_seed = 0;

// The command lines that replay the run, and the current round alone; set by the main thread
// before each round (set_replay), so that a fault's SIGABRT handler can write them as they are.
char g_replay[2048];
size_t g_replay_len = 0;

void set_replay(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(g_replay, sizeof g_replay, fmt, ap);
  va_end(ap);
  g_replay_len = n < 0 ? 0 : std::min(size_t(n), sizeof g_replay - 1);
}

// The protocol's checked faults abort() from the platform layer (a bare driver has no
// launch to report to): say how to replay before the process dies.
extern "C" void on_abort(int) {
  if (g_replay_len) {
    ssize_t ignored = write(2, g_replay, g_replay_len);
    (void)ignored;
  }
}

[[noreturn]] void fail(int round, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "%s: FAIL seed=%llu round=%d: %s\n", g_program, static_cast<unsigned long long>(g_seed), round,
          buf);
  fwrite(g_replay, 1, g_replay_len, stderr);  // names this round: main sets it before each round
  fflush(stderr);
  _Exit(1);
}

// A hang inside the barrier's own waits (wait(), wait_parity(): unbounded in unchecked
// builds) would leave no replay line; the watchdog fails the round instead. Main stores the
// round and its start before each round, 0 after the last, then sets g_done.
std::atomic<int> g_round{0};
std::atomic<uint64_t> g_round_start{0};
std::atomic<bool> g_done{false};

void watchdog(uint64_t round_hang_ns) {
  while (!g_done.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int round = g_round.load(std::memory_order_relaxed);
    const uint64_t start = g_round_start.load(std::memory_order_relaxed);
    if (round > 0 && now_ns() - start > round_hang_ns)
      fail(round, "the round has not finished after %llu s (a hang: a lost phase or a lost wake-up?)",
           (unsigned long long)(round_hang_ns / 1000000000ull));
  }
}

}  // namespace
