// Probe (session 8): the conformance kernels xbc_copy_tx and xbc_completion_tx (tx.cpp, as
// the suite compiles them) through the checked shadow-mbarrier engine, with every thread's
// steps through the engine traced (XB_CHECKED_TRACE), to find why they deadlocked under
// compute-sanitizer racecheck only (sessions 7 and 8). Runs the conformance case's launch
// configurations LAUNCHES times and prints, for a launch that faulted, the fault record
// and where the threads stopped.
// Build: nvcc -std=c++17 -arch=sm_90 -O3 -DXB_CHECKED=1 -I hip-src/include -I hip-src/kernels/conformance
//        -o checked_copy_tx bench/experiments/checked_copy_tx.cu   (-DXB_CHECKED_BULK_COPY=0: thread copies)
// Run:   checked_copy_tx copy|completion|completion1..3 LAUNCHES [DUMP-FILE]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__device__ void probe_note(unsigned event, const uint64_t* w, unsigned op, bool parity);
#define XB_CHECKED_TRACE(event, w, op, parity) probe_note(event, w, op, parity)
#include "tx.cpp"

constexpr int kMaxThreads = 2 * 128, kSlots = 32;
__device__ unsigned long long g_trace[kMaxThreads][kSlots];
__device__ unsigned g_count[kMaxThreads];
__device__ unsigned g_steps;  // the barrier has P (a completion function)

// Event (4 bits), op (4), parity (1), test_wait of M for parity 0 and 1 (a phase of that
// parity has ended), the same of P, then microseconds of the global timer.
__device__ void probe_note(unsigned event, const uint64_t* w, unsigned op, bool parity) {
  const unsigned me = blockIdx.x * blockDim.x + threadIdx.x;
  if (me >= kMaxThreads) return;
  unsigned long long v = event | (op & 15) << 4 | unsigned(parity) << 8;
#if defined(__CUDA_ARCH__)  // the mbarrier functions exist in the device pass only
  namespace mb = xb::detail::mbarrier;
  v |= uint64_t(mb::test_wait_parity(w + 1, 0)) << 9 | uint64_t(mb::test_wait_parity(w + 1, 1)) << 10;
  if (g_steps) v |= uint64_t(mb::test_wait_parity(w + 2, 0)) << 11 | uint64_t(mb::test_wait_parity(w + 2, 1)) << 12;
#endif
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  v |= (t / 1000) << 32;
  g_trace[me][g_count[me] % kSlots] = v;
  g_count[me]++;
}

static const char* kEvent[16] = {"?",      "mirror", "prewaited", "mirrored", "step",   "step-M", "wait",   "waited-MP",
                                 "test-MP", "waited", "step-Pprev", "step-fP",  "step-P", "test-M", "until-ok", "?"};

// xbc_completion_tx with one kind of wait for every thread: mode 1 wait, 2 a loop on
// try_wait, 3 a loop on try_wait_for (mode 0 is tx.cpp's mix: t % 3 picks).
__global__ void completion_one_wait(const unsigned* src, unsigned long long* report, unsigned words, unsigned rounds,
                                    unsigned mode) {
  __shared__ completion_barrier bar;
  __shared__ unsigned sums[2], count;
  completion_tx(bar, sums, count, src, report, words, rounds, mode);
}
static const char* kOp[16] = {"?", "init", "arrive", "drop", "arrive_tx", "expect_tx", "complete_tx", "wait", "copy_tx",
                              "?", "?",    "?",      "?",    "?",         "?",         "?"};

struct launch_shape {
  unsigned threads, bytes, pieces;
};

static unsigned long long trace[kMaxThreads][kSlots];
static unsigned count[kMaxThreads];

static void show_thread(FILE* to, unsigned i, unsigned threads, unsigned most) {
  fprintf(to, "  b%u t%-3u:", i / threads, i % threads);
  const unsigned n = count[i] < most ? count[i] : most;
  unsigned long long first = trace[i][(count[i] - n) % kSlots] >> 32;
  for (unsigned k = count[i] - n; k < count[i]; ++k) {
    const unsigned long long v = trace[i][k % kSlots];
    fprintf(to, " %s/%s p%llu M%llu%llu P%llu%llu +%llu", kEvent[v & 15], kOp[(v >> 4) & 15], (v >> 8) & 1, (v >> 9) & 1,
           (v >> 10) & 1, (v >> 11) & 1, (v >> 12) & 1, (v >> 32) - first);
  }
  fprintf(to, "\n");
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // a launch that hangs still leaves what came before
  const bool completion = argc > 1 && strncmp(argv[1], "completion", 10) == 0;
  const unsigned mode = completion && argv[1][10] ? atoi(argv[1] + 10) : 0;  // completion1..3
  const unsigned launches = argc > 2 ? atoi(argv[2]) : 3, rounds = 4;
  FILE* dump = argc > 3 ? fopen(argv[3], "w") : nullptr;  // every thread's trace of the first fault
  unsigned* src;
  unsigned long long* report;
  cudaMalloc(&src, 65536 + 1024);
  cudaMemset(src, 0x5a, 65536 + 1024);
  cudaMalloc(&report, 64);
  const unsigned steps = completion;
  cudaMemcpyToSymbol(g_steps, &steps, sizeof steps);
  // The conformance case's shapes (tx.rs: copy_sizes, completion_tx).
  launch_shape shapes[64];
  unsigned n_shapes = 0;
  if (completion) {
    for (unsigned words : {4u, 1024u, 4096u})
      for (unsigned threads : {1u, 96u}) shapes[n_shapes++] = {threads, words * 4, 1};
  } else {
    for (unsigned bytes : {16u, 48u, 256u, 1024u, 4096u, 16384u, 65536u}) {
      const unsigned a = bytes / 16 < 4 ? bytes / 16 : 4, b = bytes / 16 < 32 ? bytes / 16 : 32;
      for (launch_shape s : {launch_shape{1, bytes, 1}, {64, bytes, 1}, {64, bytes, a}, {128, bytes, b}})
        shapes[n_shapes++] = s;
    }
  }
  unsigned faults = 0, total = 0;
  for (unsigned launch = 0; launch < launches; ++launch) {
    for (unsigned k = 0; k < n_shapes; ++k) {
      const launch_shape s = shapes[k];
      cudaMemset(report, 0, 64);
      static unsigned zero[kMaxThreads];
      cudaMemcpyToSymbol(g_count, zero, sizeof zero);
      cudaFuncSetAttribute(xbc_copy_tx, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
      cudaFuncSetAttribute(xbc_completion_tx, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
      cudaFuncSetAttribute(completion_one_wait, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
      if (mode) completion_one_wait<<<2, s.threads, s.bytes>>>(src, report, s.bytes / 4, rounds, mode);
      else if (completion) xbc_completion_tx<<<2, s.threads, s.bytes>>>(src, report, s.bytes / 4, rounds);
      else xbc_copy_tx<<<2, s.threads, s.bytes>>>(src, report, s.bytes, s.pieces, rounds);
      const cudaError_t e = cudaDeviceSynchronize();
      ++total;
      xb_fault_record r;
      cudaMemcpyFromSymbol(&r, xb_fault_record_slot, sizeof r);
      unsigned long long rep[4];
      cudaMemcpy(rep, report, sizeof rep, cudaMemcpyDeviceToHost);
      if (e != cudaSuccess) {
        printf("launch %u shape %u: %s\n", launch, k, cudaGetErrorString(e));
        return 2;
      }
      if (r.kind == 0 && rep[0] == 0) continue;
      ++faults;
      cudaMemcpyFromSymbol(trace, g_trace, sizeof trace);
      cudaMemcpyFromSymbol(count, g_count, sizeof count);
      printf("launch %u: %u threads, %u B, %u pieces: fault kind %u op %s thread %u block %u [parity %u pending %lld "
             "tx %lld], mismatches %llu\n",
             launch, s.threads, s.bytes, s.pieces, r.kind, kOp[r.op & 15], r.thread[0], r.block[0],
             (unsigned)r.phase_parity, (long long)r.pending, (long long)r.tx, rep[0]);
      if (faults <= 2) {
        // Thread 0 (arrive_tx and the copy), every thread stopped in a completion step, the
        // faulting thread, and where the others stopped, counted.
        unsigned last[16] = {};
        for (unsigned i = r.block[0] * s.threads; i < (r.block[0] + 1) * s.threads; ++i) {
          if (!count[i]) continue;
          const unsigned e = trace[i][(count[i] - 1) % kSlots] & 15;
          ++last[e];
          const unsigned t = i % s.threads;
          if (t == 0 || t == r.thread[0] || (e != 3 && e != 6)) show_thread(stdout, i, s.threads, 10);
          if (dump && faults == 1) show_thread(dump, i, s.threads, kSlots);
        }
        printf("  threads of block %u by last event:", r.block[0]);
        for (int k = 0; k < 16; ++k)
          if (last[k]) printf(" %s=%u", kEvent[k], last[k]);
        printf("\n");
      }
      xb_fault_record clear = {};
      cudaMemcpyToSymbol(xb_fault_record_slot, &clear, sizeof clear);
    }
  }
  if (dump) fclose(dump);
  printf("probe %s%u: %u faults in %u launches\n", completion ? "completion" : "copy", mode, faults, total);
  return faults != 0;
}
