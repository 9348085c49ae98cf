// The host backend's C++ baseline for the round trip: C++20 std::barrier (libstdc++) on
// `threads` OS threads, the same loop as hip-src/kernels/bench/round_trip.cpp runs on xb.
// bench/build.rs compiles it with -std=c++20 -O2 (the host kernels' level);
// bench/src/host_baselines.rs calls it. Its Rust twin there runs std::sync::Barrier.
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace {

// Held shut while the threads are created, so that a failed creation can send the ones
// already running home instead of leaving them in a barrier that can never complete.
class gate {
 public:
  // True when the run goes ahead.
  bool wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [&] { return state_ != 0; });
    return state_ == 1;
  }
  void open(bool go) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      state_ = go ? 1 : 2;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  int state_ = 0;
};

}  // namespace

// Runs `iters` phases of std::barrier<>::arrive_and_wait on `threads` new threads. Thread 0
// times its loop (after a start barrier, so thread creation is not timed) and stores the
// nanoseconds in *ns. With `check` set, thread t writes its slot of one of two buffers before
// each phase and reads its neighbour's after it; stale reads are added to *stale. Returns 0,
// or -1 when a thread could not be created or anything threw (nothing is stored then).
extern "C" int xbb_std_barrier_round_trip(unsigned threads, unsigned iters, unsigned check, uint64_t* ns,
                                          uint64_t* stale) noexcept {
  if (threads == 0) return -1;
  try {
    const unsigned n = threads;
    std::vector<unsigned> slots(2 * std::size_t(n));
    std::vector<uint64_t> wrong(n, 0);
    std::barrier<> start(n), bar(n);
    gate go;
    uint64_t elapsed = 0;
    auto body = [&](unsigned t) {
      if (!go.wait()) return;
      const unsigned next = (t + 1) % n;
      uint64_t local = 0;
      start.arrive_and_wait();
      const auto t0 = std::chrono::steady_clock::now();
      for (unsigned i = 0; i < iters; ++i) {
        unsigned* slot = slots.data() + (i & 1) * n;  // two buffers, as on the device
        if (check) slot[t] = i * n + t;
        bar.arrive_and_wait();
        if (check) local += slot[next] != i * n + next;
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (t == 0) elapsed = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      wrong[t] = local;
    };
    std::vector<std::thread> workers;
    workers.reserve(n);
    bool created = true;
    try {
      for (unsigned t = 0; t < n; ++t) workers.emplace_back(body, t);
    } catch (...) {
      created = false;
    }
    go.open(created);
    for (auto& w : workers) w.join();
    if (!created) return -1;
    uint64_t total = 0;
    for (uint64_t w : wrong) total += w;
    *ns = elapsed;
    *stale += total;
    return 0;
  } catch (...) {
    return -1;
  }
}
