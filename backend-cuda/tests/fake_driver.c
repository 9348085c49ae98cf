/* A stand-in libcuda.so for tests on machines without an NVIDIA GPU (fake_driver.rs).
 *
 * It exports the driver entry points backend-cuda calls through cudarc (driver.rs REQUIRED,
 * and cuEventElapsedTime[_v2]) with the CUDA driver API's signatures, and models what the
 * backend relies on:
 *
 * - cuInit first: every other call answers CUDA_ERROR_NOT_INITIALIZED before it.
 * - Primary contexts, retained and released, current per thread. Memory, modules, streams and
 *   events belong to the context current when they were made; a launch needs its function
 *   and stream in the current context, and a kernel may touch only memory of its own
 *   context or of a context its context enabled as a peer (else CUDA_ERROR_ILLEGAL_ADDRESS).
 * - Device memory is host memory, handed out 256-byte aligned and filled with 0xab (the
 *   backend must zero it). Every device range a call names must lie inside one live
 *   allocation or module global, else CUDA_ERROR_INVALID_VALUE.
 * - Streams run asynchronously: a launch or copy is queued with the time it will finish;
 *   its effects happen when the host waits for it (cuStreamSynchronize, cuEventSynchronize,
 *   or a synchronous copy or memset, which waits for every blocking stream as the legacy
 *   default stream does). cuMemFree, cuModuleUnload and cuStreamDestroy wait for the
 *   context's (or stream's) work first. Events record when their stream reaches them;
 *   cuEventElapsedTime answers CUDA_ERROR_NOT_READY until both have completed.
 *   cuStreamWaitEvent queues a wait of no work that ends when the event does (an event of
 *   any context; one never recorded is no wait): the stream's later work starts no sooner,
 *   and when the wait runs it first runs the event's stream up to the event, so that work's
 *   effects come first. A wait for an event behind a hung kernel ends as the hang does.
 * - Modules: cuModuleLoadData takes a text image, 8-byte aligned and NUL-terminated (what
 *   the backend's aligned_copy makes): "FAKECUDA" followed by "kernel:NAME" and
 *   "global:NAME:BYTES" words. cuModuleGetFunction returns the same handle for the same
 *   name, as the driver does. Kernels run a behaviour chosen by their name:
 *     echo(u64* out, u32, f32, u64, f64, i32, i64)  16 bytes of static shared memory;
 *         writes each argument's bytes (exactly its C size, zero-padded to a word) to
 *         out[0..6], then grid blocks, block threads, dynamic shared bytes, cooperative.
 *     add(float* data, u32 n, f32 f)   data[i] += f for i < min(n, threads of the grid).
 *     fault(u32 kind)   the last thread of the last block records a fault in the module's
 *         xb_fault_record_slot (abi.h's xb_fault_record), claiming it by `op` as the CUDA
 *         platform layer does: op XB_OP_ARRIVE_TX, barrier 0x10, value -5, limit 2^20-1,
 *         pending 2, tx -3, expected 7, phase parity 1, scope 2, then `kind` (the argument).
 *     spin(u64 ns)   runs for ns nanoseconds.
 *     hang()         never finishes: a wait for it lasts XBAR_FAKE_CUDA_WATCHDOG_MS
 *         (default 1000), then fails with CUDA_ERROR_LAUNCH_TIMEOUT as a display watchdog
 *         does, and the context stays broken.
 *   A kernel's error (a pointer outside its context's memory: CUDA_ERROR_ILLEGAL_ADDRESS,
 *   the watchdog) is sticky: every later call of the context returns it.
 * - Lazy loading (the driver's default on Linux since CUDA 12.2): a module's kernels start
 *   unloaded, and the first launch of an unloaded kernel loads it, which first waits for all
 *   work of its context, other streams' included (loading may synchronize the context, so a
 *   kernel that waits for one not yet loaded never ends). The driver may load at
 *   cuModuleGetFunction already; loading at the launch is the stricter model, as a lookup
 *   made early does not help. cuFuncLoad loads a kernel ahead without waiting;
 *   cuModuleGetFunctionCount and cuModuleEnumerateFunctions (in the order of the image)
 *   list the kernels to load.
 * - Dynamic shared memory: up to 48 KiB less the kernel's static shared memory, or what
 *   cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) set last;
 *   cooperative launches need the device attribute and at most 32 resident blocks per SM
 *   (fewer for big blocks), else CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.
 *
 * - Memory shared with host threads: device 0 reports CONCURRENT_MANAGED_ACCESS (device 1
 *   too where XBAR_FAKE_CUDA_MANAGED=both) and HOST_NATIVE_ATOMIC_SUPPORTED where
 *   XBAR_FAKE_CUDA_HOST_ATOMICS=1 (device 1 too where it is 2). Kernels of every device
 *   with concurrent managed access use managed memory, and kernels of every context use
 *   pinned memory allocated PORTABLE;
 *   cuMemAllocManaged and cuMemHostAlloc (mapped at the host address) hand out memory as
 *   cuMemAlloc does, freed by cuMemFree and cuMemFreeHost respectively. cuStreamQuery runs
 *   what has finished by now and answers CUDA_ERROR_NOT_READY while work remains.
 *
 * - Peer access: each context keeps the set of contexts it enabled as peers.
 *   cuCtxEnablePeerAccess(peer, 0) adds `peer` to the current context's set (its kernels may
 *   then use the peer's memory; not the other way round); it answers
 *   CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED the second time, CUDA_ERROR_INVALID_DEVICE for
 *   the current context itself, and CUDA_ERROR_PEER_ACCESS_UNSUPPORTED where the devices
 *   cannot reach each other. The last release of a context empties its set and removes it
 *   from the others'. cuDeviceCanAccessPeer and cuDeviceGetP2PAttribute (PERFORMANCE_RANK 0,
 *   ACCESS_SUPPORTED, NATIVE_ATOMIC_SUPPORTED, CUDA_ARRAY_ACCESS_SUPPORTED, and 0 for
 *   ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED) answer what XBAR_FAKE_CUDA_P2P says of the link
 *   between the two devices; as the driver does, a device cannot access itself as a peer,
 *   and cuDeviceGetP2PAttribute refuses one device as both ends (CUDA_ERROR_INVALID_DEVICE).
 *
 * Settings: XBAR_FAKE_CUDA_INIT ("no-device": cuInit fails with CUDA_ERROR_NO_DEVICE;
 * "error:N": with code N, one cudarc knows), XBAR_FAKE_CUDA_DEVICES (0 to 2, default 2: an
 * sm_90 with cooperative launch and an sm_80 without), XBAR_FAKE_CUDA_MEMORY_MIB (per
 * device, default 1024), XBAR_FAKE_CUDA_WATCHDOG_MS, XBAR_FAKE_CUDA_HOST_ATOMICS, XBAR_FAKE_CUDA_MANAGED,
 * XBAR_FAKE_CUDA_PINNED_OFFSET (bytes cuMemHostGetDevicePointer adds to the host address:
 * a system without unified addressing), XBAR_FAKE_CUDA_P2P (the link between the two devices:
 * "full", the default, peer access with native atomics; "no-atomics", peer access whose
 * NATIVE_ATOMIC_SUPPORTED attribute is 0; "none", no peer access), and XBAR_FAKE_CUDA_LOG: a
 * file that gets one line per notable call (cuInit, launches with their argument bytes,
 * cuFuncSetAttribute, the elapsed-time entry point used, errors of kernels, stream
 * destructions, the three peer access calls with their answers, stream waits for events
 * with the two devices, kernel loads) and, at exit
 * after a cuInit, what was never released. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xbarrier/abi.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  CUDA_ERROR_UNKNOWN = 999,
};

/* Names and descriptions as the driver gives them. cudarc reads a CUresult as a Rust enum,
 * so the fake may return only codes that enum has: these. */
static const struct {
  CUresult code;
  const char* name;
  const char* text;
} codes[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
enum { NCODES = sizeof codes / sizeof codes[0] };

static int known_code(CUresult code) {
  for (int i = 0; i < NCODES; i++)
    if (codes[i].code == code) return 1;
  return 0;
}

/* ---- settings, log, time ---- */

static long setting(const char* name, long fallback) {
  const char* value = getenv(name);
  return value && *value ? strtol(value, NULL, 10) : fallback;
}

static void note(const char* format, ...) {
  const char* path = getenv("XBAR_FAKE_CUDA_LOG");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  va_list args;
  va_start(args, format);
  vfprintf(f, format, args);
  va_end(args);
  fputc('\n', f);
  fclose(f);
}

#define NEVER UINT64_MAX

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_until(uint64_t ns) {
  struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
  }
}

/* ---- devices and contexts ---- */

enum { MAX_DEVICES = 2 };
static const struct {
  const char* name;
  int major, minor, multiprocessors, cooperative, shared_optin, concurrent_managed;
} devices[MAX_DEVICES] = {
    {"Fake NVIDIA H200", 9, 0, 132, 1, 232448, 1},
    {"Fake NVIDIA A30", 8, 0, 56, 0, 166912, 0},
};

struct context {
  int device;
  int retains;
  CUresult sticky; /* a kernel's error: every later call of the context returns it */
  size_t allocated;
  int peers[MAX_DEVICES]; /* peers[d]: its kernels may use the memory of device d's context */
};
static struct context contexts[MAX_DEVICES];
static __thread struct context* current;
static int initialized;
static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;

/* CONCURRENT_MANAGED_ACCESS: device 0's; device 1's too with XBAR_FAKE_CUDA_MANAGED=both. */
static int concurrent_managed(int device) {
  const char* how = getenv("XBAR_FAKE_CUDA_MANAGED");
  return devices[device].concurrent_managed || (how && !strcmp(how, "both"));
}

static int device_count(void) {
  long n = setting("XBAR_FAKE_CUDA_DEVICES", MAX_DEVICES);
  return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : (int)n;
}

/* The link between the two devices (XBAR_FAKE_CUDA_P2P). */
enum link { LINK_NONE, LINK_NO_ATOMICS, LINK_FULL };
static enum link peer_link(void) {
  const char* how = getenv("XBAR_FAKE_CUDA_P2P");
  if (!how || !*how || !strcmp(how, "full")) return LINK_FULL;
  if (!strcmp(how, "no-atomics")) return LINK_NO_ATOMICS;
  if (!strcmp(how, "none")) return LINK_NONE;
  fprintf(stderr, "fake libcuda: XBAR_FAKE_CUDA_P2P=%s is none of full, no-atomics, none\n", how);
  abort();
}

/* Whether kernels of `ctx` may use memory of `owner`: its own, or a peer's it enabled. */
static int reaches(const struct context* ctx, const struct context* owner) {
  return ctx == owner || ctx->peers[owner->device];
}

/* ---- handles: every object ever made stays listed (dead ones too), so a stale or foreign
 * handle is found out without dereferencing it ---- */

enum kind { MEMORY = 1, MODULE, FUNCTION, STREAM, EVENT };
struct object {
  struct object* next;
  enum kind kind;
  int live;
  struct context* ctx;
};
static struct object* objects;

static void* make(enum kind kind, size_t size, struct context* ctx) {
  struct object* o = calloc(1, size);
  o->kind = kind;
  o->live = 1;
  o->ctx = ctx;
  o->next = objects;
  objects = o;
  return o;
}

static void* find(const void* handle, enum kind kind) {
  for (struct object* o = objects; o; o = o->next)
    if (o == handle) return o->live && o->kind == kind ? o : NULL;
  return NULL;
}

struct memory {
  struct object o;
  unsigned char* base;
  size_t size;
  int global; /* a module's global, freed with the module */
  int pinned_host; /* cuMemHostAlloc's: freed with cuMemFreeHost, not cuMemFree */
  int managed;     /* cuMemAllocManaged's: kernels of every device with concurrent access reach it */
  int portable;    /* pinned with CU_MEMHOSTALLOC_PORTABLE: kernels of every context reach it */
};

struct behaviour {
  const char* name;
  int params;
  int sizes[8];
  int static_shared;
};
enum { ECHO, ADD, FAULT, SPIN, HANG };
static const struct behaviour behaviours[] = {
    [ECHO] = {"echo", 7, {8, 4, 4, 8, 8, 4, 8}, 16},
    [ADD] = {"add", 3, {8, 4, 4}, 0},
    [FAULT] = {"fault", 1, {4}, 0},
    [SPIN] = {"spin", 1, {8}, 0},
    [HANG] = {"hang", 0, {0}, 0},
};
enum { NBEHAVIOURS = sizeof behaviours / sizeof behaviours[0] };

struct function {
  struct object o;
  struct module* module;
  int behaviour;
  char name[64];
  int max_dynamic_shared;
  int loaded; /* lazy loading: set by cuFuncLoad or the first launch */
};

enum { MAX_NAMES = 16 };
struct module {
  struct object o;
  int nfunctions, nglobals;
  struct function* functions[MAX_NAMES];
  struct memory* globals[MAX_NAMES];
  char global_names[MAX_NAMES][64];
};

struct op {
  struct op* next;
  struct function* function; /* NULL: a copy, or a wait (`after` set) */
  struct stream* after;      /* a wait (cuStreamWaitEvent): `after`'s work up to after_time */
  uint64_t after_time;
  unsigned grid[3], block[3], shared;
  int cooperative;
  unsigned char params[8][8];
  CUdeviceptr dst, src;
  size_t bytes;
  uint64_t start, done; /* done: NEVER for a kernel that hangs */
};

struct stream {
  struct object o;
  unsigned flags;
  struct op *head, *tail;
  uint64_t tail_done;
};

struct event {
  struct object o;
  unsigned flags;
  int recorded;
  uint64_t time;
  struct stream* stream;
};

/* Whether kernels of `ctx` may use memory `m`: memory of a context it reaches, managed memory
 * where its device shares that concurrently, or portable pinned host memory. */
static int uses(const struct context* ctx, const struct memory* m) {
  return reaches(ctx, m->o.ctx) || (m->managed && concurrent_managed(ctx->device)) || m->portable;
}

/* The host address of device range ptr..+bytes; with `only`, memory its kernels may use. */
static unsigned char* device_range(CUdeviceptr ptr, size_t bytes, struct context* only) {
  for (struct object* o = objects; o; o = o->next) {
    struct memory* m = (struct memory*)o;
    if (o->kind != MEMORY || !o->live || (only && !uses(only, m))) continue;
    uintptr_t base = (uintptr_t)m->base;
    if (ptr >= base && ptr - base <= m->size && bytes <= m->size - (ptr - base)) return (unsigned char*)(uintptr_t)ptr;
  }
  return NULL;
}

/* ---- the work of streams ---- */

static uint64_t read_u64(const struct op* op, int i) {
  uint64_t v;
  memcpy(&v, op->params[i], 8);
  return v;
}

static struct memory* module_global(struct module* m, const char* name) {
  for (int i = 0; i < m->nglobals; i++)
    if (!strcmp(m->global_names[i], name)) return m->globals[i];
  return NULL;
}

static CUresult wait_stream(struct stream* s, uint64_t until);

static const char* op_name(const struct op* op) {
  return op->function ? op->function->name : op->after ? "cuStreamWaitEvent" : "copy";
}

/* Runs a queued launch, copy or wait: what the GPU would have done by op->done. */
static CUresult run(struct op* op, struct context* ctx) {
  if (op->after) {
    /* The work the event stood behind takes effect first. An error there is the event's
     * context's own, reported to its calls; the waiting stream goes on. */
    if (op->after->o.live) (void)wait_stream(op->after, op->after_time);
    return CUDA_SUCCESS;
  }
  if (!op->function) {
    memmove((void*)(uintptr_t)op->dst, (const void*)(uintptr_t)op->src, op->bytes);
    return CUDA_SUCCESS;
  }
  const struct behaviour* b = &behaviours[op->function->behaviour];
  uint64_t blocks = (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
  uint64_t threads = (uint64_t)op->block[0] * op->block[1] * op->block[2];
  switch (op->function->behaviour) {
    case ECHO: {
      uint64_t words[10] = {0};
      unsigned char* out = device_range(read_u64(op, 0), sizeof words, ctx);
      if (!out) return CUDA_ERROR_ILLEGAL_ADDRESS;
      for (int i = 1; i < b->params; i++) memcpy(&words[i - 1], op->params[i], (size_t)b->sizes[i]);
      words[6] = blocks;
      words[7] = threads;
      words[8] = op->shared;
      words[9] = (uint64_t)op->cooperative;
      memcpy(out, words, sizeof words);
      return CUDA_SUCCESS;
    }
    case ADD: {
      uint32_t n;
      float f;
      memcpy(&n, op->params[1], 4);
      memcpy(&f, op->params[2], 4);
      uint64_t count = n < blocks * threads ? n : blocks * threads;
      float* data = (float*)device_range(read_u64(op, 0), count * sizeof(float), ctx);
      if (!data && count) return CUDA_ERROR_ILLEGAL_ADDRESS;
      for (uint64_t i = 0; i < count; i++) data[i] += f;
      return CUDA_SUCCESS;
    }
    case FAULT: {
      struct memory* slot = module_global(op->function->module, "xb_fault_record_slot");
      if (!slot || slot->size < sizeof(xb_fault_record)) return CUDA_SUCCESS;
      xb_fault_record* r = (xb_fault_record*)slot->base;
      if (r->op != 0) return CUDA_SUCCESS; /* an earlier fault claimed the record */
      xb_fault_record f = {0};
      memcpy(&f.kind, op->params[0], 4);
      f.op = XB_OP_ARRIVE_TX;
      for (int i = 0; i < 3; i++) {
        f.block[i] = op->grid[i] - 1;
        f.thread[i] = op->block[i] - 1;
      }
      f.barrier = 0x10;
      f.value = -5;
      f.limit = (1 << 20) - 1;
      f.pending = 2;
      f.tx = -3;
      f.expected = 7;
      f.phase_parity = 1;
      f.scope = 2;
      const uint32_t kind = f.kind;
      f.kind = 0;
      *r = f;
      r->kind = kind; /* published last */
      return CUDA_SUCCESS;
    }
    default: /* spin: the time is the work; hang never gets here */
      return CUDA_SUCCESS;
  }
}

static void discard(struct stream* s) {
  while (s->head) {
    struct op* op = s->head;
    s->head = op->next;
    free(op);
  }
  s->tail = NULL;
}

/* A kernel failed: the context is unusable from now on, its queued work is dropped. */
static CUresult break_context(struct context* ctx, CUresult code, const char* kernel) {
  ctx->sticky = code;
  note("sticky %d on device %d (kernel %s)", code, ctx->device, kernel);
  for (struct object* o = objects; o; o = o->next)
    if (o->kind == STREAM && o->live && o->ctx == ctx) discard((struct stream*)o);
  return code;
}

/* Waits until `s` has done its work queued to finish by `until` (NEVER: all of it). */
static CUresult wait_stream(struct stream* s, uint64_t until) {
  struct context* ctx = s->o.ctx;
  while (s->head && s->head->done <= until) {
    struct op* op = s->head;
    if (ctx->sticky) return ctx->sticky;
    if (op->done == NEVER) { /* the first such op is a hang (or a wait for one): what follows starts at NEVER */
      sleep_until(op->start + (uint64_t)setting("XBAR_FAKE_CUDA_WATCHDOG_MS", 1000) * 1000000u);
      note("watchdog ended %s", op_name(op));
      return break_context(ctx, CUDA_ERROR_LAUNCH_TIMEOUT, op_name(op));
    }
    sleep_until(op->done);
    /* Off the queue before it runs: a wait runs another stream's work, which may wait for
     * this stream's (two streams waiting for each other's events). */
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    char name[64];
    snprintf(name, sizeof name, "%s", op_name(op));
    CUresult r = run(op, ctx);
    free(op);
    if (r) return break_context(ctx, r, name);
  }
  return ctx->sticky;
}

/* Waits for the context's streams: the blocking ones (`all` 0: what the legacy default
 * stream, and so a synchronous copy, waits for) or all of them (an implicit synchronize). */
static CUresult wait_context(struct context* ctx, int all) {
  for (struct object* o = objects; o; o = o->next) {
    struct stream* s = (struct stream*)o;
    if (o->kind != STREAM || !o->live || o->ctx != ctx || (!all && (s->flags & 1))) continue;
    CUresult r = wait_stream(s, NEVER);
    if (r) return r;
  }
  return ctx->sticky;
}

static struct op* enqueue(struct stream* s, uint64_t duration) {
  struct op* op = calloc(1, sizeof *op);
  uint64_t now = now_ns();
  op->start = s->tail_done > now ? s->tail_done : now;
  op->done = op->start == NEVER || duration == NEVER ? NEVER : op->start + duration;
  s->tail_done = op->done;
  if (s->tail)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
  return op;
}

/* ---- the API ---- */

/* Every entry point runs under one lock (waits included): calls are serialized. */
#define API(call)                    \
  do {                               \
    pthread_mutex_lock(&big_lock);   \
    CUresult result_ = (call);       \
    pthread_mutex_unlock(&big_lock); \
    return result_;                  \
  } while (0)

#define NEED_INIT \
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED
#define NEED_CONTEXT                                                    \
  NEED_INIT;                                                            \
  if (!current || !current->retains) return CUDA_ERROR_INVALID_CONTEXT; \
  if (current->sticky) return current->sticky

static CUresult init(unsigned flags) {
  const char* how = getenv("XBAR_FAKE_CUDA_INIT");
  int code = 0;
  note("cuInit");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (how && !strcmp(how, "no-device")) return CUDA_ERROR_NO_DEVICE;
  if (how && sscanf(how, "error:%d", &code) == 1) {
    if (!known_code(code)) {
      fprintf(stderr, "fake libcuda: XBAR_FAKE_CUDA_INIT=%s is not a code cudarc knows\n", how);
      abort();
    }
    return code;
  }
  initialized = 1;
  return CUDA_SUCCESS;
}
CUresult cuInit(unsigned flags) { API(init(flags)); }

static CUresult error_text(CUresult error, const char** out, int name) {
  for (int i = 0; i < NCODES; i++)
    if (codes[i].code == error) {
      *out = name ? codes[i].name : codes[i].text;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGetErrorName(CUresult error, const char** name) { return error_text(error, name, 1); }
CUresult cuGetErrorString(CUresult error, const char** text) { return error_text(error, text, 0); }

static CUresult get_count(int* count) {
  NEED_INIT;
  *count = device_count();
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* count) { API(get_count(count)); }

static CUresult device_get(CUdevice* device, int ordinal) {
  NEED_INIT;
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* device, int ordinal) { API(device_get(device, ordinal)); }

static CUresult device_name(char* name, int len, CUdevice device) {
  NEED_INIT;
  if (device < 0 || device >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  if (!name || len < 1) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", devices[device].name);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int len, CUdevice device) { API(device_name(name, len, device)); }

static CUresult device_attribute(int* value, int attribute, CUdevice device) {
  NEED_INIT;
  if (device < 0 || device >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case 1: *value = 1024; break;                                   /* MAX_THREADS_PER_BLOCK */
    case 10: *value = 32; break;                                    /* WARP_SIZE */
    case 16: *value = devices[device].multiprocessors; break;       /* MULTIPROCESSOR_COUNT */
    case 75: *value = devices[device].major; break;                 /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *value = devices[device].minor; break;                 /* COMPUTE_CAPABILITY_MINOR */
    case 86: *value = setting("XBAR_FAKE_CUDA_HOST_ATOMICS", 0) > device; break; /* HOST_NATIVE_ATOMIC_SUPPORTED */
    case 89: *value = concurrent_managed(device); break;            /* CONCURRENT_MANAGED_ACCESS */
    case 95: *value = devices[device].cooperative; break;           /* COOPERATIVE_LAUNCH */
    case 97: *value = devices[device].shared_optin; break;          /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  API(device_attribute(value, attribute, device));
}

static CUresult retain(struct context** ctx, CUdevice device) {
  NEED_INIT;
  if (device < 0 || device >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  contexts[device].device = device;
  contexts[device].retains++;
  *ctx = &contexts[device];
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(struct context** ctx, CUdevice device) { API(retain(ctx, device)); }

/* The last release destroys the context and everything still in it, as the driver does. */
static CUresult release(CUdevice device) {
  NEED_INIT;
  if (device < 0 || device >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  struct context* ctx = &contexts[device];
  if (ctx->retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx->retains > 0) return CUDA_SUCCESS;
  int live = 0;
  for (struct object* o = objects; o; o = o->next)
    if (o->live && o->ctx == ctx && !(o->kind == MEMORY && ((struct memory*)o)->global)) {
      o->live = 0;
      live++;
    }
  if (live) note("primary context of device %d destroyed with %d live objects", device, live);
  ctx->sticky = CUDA_SUCCESS;
  ctx->allocated = 0;
  for (int d = 0; d < MAX_DEVICES; d++) ctx->peers[d] = contexts[d].peers[device] = 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) { API(release(device)); }

static CUresult set_current(struct context* ctx) {
  NEED_INIT;
  if (ctx && (ctx < contexts || ctx >= contexts + MAX_DEVICES || !ctx->retains)) return CUDA_ERROR_INVALID_CONTEXT;
  current = ctx;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(struct context* ctx) { API(set_current(ctx)); }

/* Whether kernels on `device` can use memory of `peer` (not of itself, as the driver says). */
static CUresult can_access_peer(int* can, CUdevice device, CUdevice peer) {
  NEED_INIT;
  if (device < 0 || device >= device_count() || peer < 0 || peer >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  *can = device != peer && peer_link() != LINK_NONE;
  note("cuDeviceCanAccessPeer %d %d: %d", device, peer, *can);
  return CUDA_SUCCESS;
}
CUresult cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) { API(can_access_peer(can, device, peer)); }

static CUresult p2p_attribute(int* value, int attribute, CUdevice src, CUdevice dst) {
  NEED_INIT;
  if (src < 0 || src >= device_count() || dst < 0 || dst >= device_count() || src == dst)
    return CUDA_ERROR_INVALID_DEVICE;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  enum link link = peer_link();
  switch (attribute) {
    case 1: *value = 0; break;                        /* PERFORMANCE_RANK */
    case 2: *value = link != LINK_NONE; break;        /* ACCESS_SUPPORTED */
    case 3: *value = link == LINK_FULL; break;        /* NATIVE_ATOMIC_SUPPORTED */
    case 4: *value = link != LINK_NONE; break;        /* CUDA_ARRAY_ACCESS_SUPPORTED */
    case 5: *value = 0; break;                        /* ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED */
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  note("cuDeviceGetP2PAttribute %d %d %d: %d", attribute, src, dst, *value);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetP2PAttribute(int* value, int attribute, CUdevice src, CUdevice dst) {
  API(p2p_attribute(value, attribute, src, dst));
}

/* Lets kernels of the current context use `peer`'s memory. */
static CUresult enable_peer_access(struct context* peer, unsigned flags) {
  NEED_CONTEXT;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!peer || peer < contexts || peer >= contexts + MAX_DEVICES || !peer->retains) return CUDA_ERROR_INVALID_CONTEXT;
  if (peer == current) return CUDA_ERROR_INVALID_DEVICE;
  if (peer_link() == LINK_NONE) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (current->peers[peer->device]) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  current->peers[peer->device] = 1;
  return CUDA_SUCCESS;
}
CUresult cuCtxEnablePeerAccess(struct context* peer, unsigned flags) {
  pthread_mutex_lock(&big_lock);
  CUresult r = enable_peer_access(peer, flags);
  note("cuCtxEnablePeerAccess device %d peer %d: %d", current ? current->device : -1,
       peer >= contexts && peer < contexts + MAX_DEVICES ? peer->device : -1, r);
  pthread_mutex_unlock(&big_lock);
  return r;
}

/* Whether `bytes` more fit the device's memory (XBAR_FAKE_CUDA_MEMORY_MIB). */
static int fits(size_t bytes) {
  size_t limit = (size_t)setting("XBAR_FAKE_CUDA_MEMORY_MIB", 1024) << 20;
  return bytes <= limit - current->allocated;
}

/* Device, managed and pinned host memory alike: host memory handed out 256-byte aligned. */
static struct memory* allocate(size_t bytes, const char* call) {
  size_t rounded = (bytes + 255) / 256 * 256;
  struct memory* m = make(MEMORY, sizeof *m, current);
  m->base = aligned_alloc(256, rounded);
  m->size = bytes;
  memset(m->base, 0xab, rounded); /* not zero: the backend must clear it */
  current->allocated += bytes;
  note("%s device %d bytes %zu", call, current->device, bytes);
  return m;
}

static CUresult mem_alloc(CUdeviceptr* ptr, size_t bytes) {
  NEED_CONTEXT;
  if (!ptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!fits(bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = (uintptr_t)allocate(bytes, "cuMemAlloc_v2")->base;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) { API(mem_alloc(ptr, bytes)); }

/* Frees the allocation at `ptr` of the kind the call frees (pinned host memory or not). */
static CUresult free_memory(CUdeviceptr ptr, int pinned_host) {
  for (struct object* o = objects; o; o = o->next) {
    struct memory* m = (struct memory*)o;
    if (o->kind == MEMORY && o->live && !m->global && (uintptr_t)m->base == ptr && m->pinned_host == pinned_host) {
      CUresult r = wait_context(o->ctx, 1); /* freeing synchronizes implicitly */
      o->live = 0;
      o->ctx->allocated -= m->size;
      free(m->base);
      return r;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult mem_free(CUdeviceptr ptr) {
  NEED_INIT;
  if (!current || !current->retains) return CUDA_ERROR_INVALID_CONTEXT;
  return free_memory(ptr, 0);
}
CUresult cuMemFree_v2(CUdeviceptr ptr) { API(mem_free(ptr)); }

/* Managed memory: what devices with CONCURRENT_MANAGED_ACCESS share with the CPU. */
static CUresult mem_alloc_managed(CUdeviceptr* ptr, size_t bytes, unsigned flags) {
  NEED_CONTEXT;
  if (!ptr || bytes == 0 || flags != 1 /* CU_MEM_ATTACH_GLOBAL */) return CUDA_ERROR_INVALID_VALUE;
  if (!concurrent_managed(current->device)) return CUDA_ERROR_NOT_SUPPORTED;
  if (!fits(bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  struct memory* m = allocate(bytes, "cuMemAllocManaged");
  m->managed = 1;
  *ptr = (uintptr_t)m->base;
  return CUDA_SUCCESS;
}
CUresult cuMemAllocManaged(CUdeviceptr* ptr, size_t bytes, unsigned flags) { API(mem_alloc_managed(ptr, bytes, flags)); }

/* Pinned host memory, mapped (DEVICEMAP) at the same address (unified addressing). */
static CUresult mem_host_alloc(void** ptr, size_t bytes, unsigned flags) {
  NEED_CONTEXT;
  if (!ptr || bytes == 0 || !(flags & 2) /* CU_MEMHOSTALLOC_DEVICEMAP */) return CUDA_ERROR_INVALID_VALUE;
  if (!fits(bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  struct memory* m = allocate(bytes, "cuMemHostAlloc");
  m->pinned_host = 1;
  m->portable = (flags & 1) != 0; /* CU_MEMHOSTALLOC_PORTABLE */
  *ptr = m->base;
  return CUDA_SUCCESS;
}
CUresult cuMemHostAlloc(void** ptr, size_t bytes, unsigned flags) { API(mem_host_alloc(ptr, bytes, flags)); }

static CUresult mem_host_get_device_pointer(CUdeviceptr* out, void* p, unsigned flags) {
  NEED_CONTEXT;
  for (struct object* o = objects; o; o = o->next) {
    struct memory* m = (struct memory*)o;
    if (o->kind == MEMORY && o->live && m->pinned_host && m->base == p && out && flags == 0) {
      *out = (uintptr_t)p + (uintptr_t)setting("XBAR_FAKE_CUDA_PINNED_OFFSET", 0);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* p, unsigned flags) {
  API(mem_host_get_device_pointer(out, p, flags));
}

static CUresult mem_free_host(void* p) {
  NEED_INIT;
  if (!current || !current->retains) return CUDA_ERROR_INVALID_CONTEXT;
  return free_memory((uintptr_t)p, 1);
}
CUresult cuMemFreeHost(void* p) { API(mem_free_host(p)); }

static CUresult memset_d8(CUdeviceptr dst, unsigned char value, size_t n) {
  NEED_CONTEXT;
  unsigned char* p = device_range(dst, n, NULL);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = wait_context(current, 0);
  if (r) return r;
  memset(p, value, n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) { API(memset_d8(dst, value, n)); }

static CUresult htod(CUdeviceptr dst, const void* src, size_t n) {
  NEED_CONTEXT;
  unsigned char* p = device_range(dst, n, NULL);
  if (!p || (!src && n)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = wait_context(current, 0);
  if (r) return r;
  memcpy(p, src, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) { API(htod(dst, src, n)); }

static CUresult dtoh(void* dst, CUdeviceptr src, size_t n) {
  NEED_CONTEXT;
  unsigned char* p = device_range(src, n, NULL);
  if (!p || (!dst && n)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = wait_context(current, 0);
  if (r) return r;
  memcpy(dst, p, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) { API(dtoh(dst, src, n)); }

static CUresult dtod_async(CUdeviceptr dst, CUdeviceptr src, size_t n, struct stream* stream) {
  NEED_CONTEXT;
  struct stream* s = find(stream, STREAM);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (s->o.ctx != current) return CUDA_ERROR_INVALID_CONTEXT;
  if (!device_range(dst, n, NULL) || !device_range(src, n, NULL)) return CUDA_ERROR_INVALID_VALUE;
  struct op* op = enqueue(s, 1000);
  op->dst = dst;
  op->src = src;
  op->bytes = n;
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, struct stream* stream) {
  API(dtod_async(dst, src, n, stream));
}

static CUresult load_data(struct module** out, const void* image) {
  NEED_CONTEXT;
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  if (((uintptr_t)image & 7) != 0 || strncmp(image, "FAKECUDA", 8) != 0) return CUDA_ERROR_INVALID_IMAGE;
  char* text = strdup(image);
  struct module* m = make(MODULE, sizeof *m, current);
  char* save = NULL;
  CUresult r = CUDA_SUCCESS;
  for (char* word = strtok_r(text + 8, " \t\n", &save); word && !r; word = strtok_r(NULL, " \t\n", &save)) {
    char name[64];
    size_t bytes = 0;
    int which = -1;
    if (sscanf(word, "kernel:%63s", name) == 1 && m->nfunctions < MAX_NAMES) {
      for (int i = 0; i < NBEHAVIOURS; i++)
        if (!strcmp(name, behaviours[i].name)) which = i;
      if (which < 0) {
        note("cuModuleLoadData: no behaviour for kernel %s", name);
        r = CUDA_ERROR_INVALID_IMAGE;
        break;
      }
      struct function* f = make(FUNCTION, sizeof *f, current);
      f->module = m;
      f->behaviour = which;
      snprintf(f->name, sizeof f->name, "%s", name);
      f->max_dynamic_shared = 48 * 1024 - behaviours[which].static_shared;
      m->functions[m->nfunctions++] = f;
    } else if (sscanf(word, "global:%63[^:]:%zu", name, &bytes) == 2 && bytes > 0 && m->nglobals < MAX_NAMES) {
      struct memory* g = make(MEMORY, sizeof *g, current);
      g->base = aligned_alloc(256, (bytes + 255) / 256 * 256);
      memset(g->base, 0, bytes); /* globals start zeroed, as a compiled module's do */
      g->size = bytes;
      g->global = 1;
      snprintf(m->global_names[m->nglobals], 64, "%s", name);
      m->globals[m->nglobals++] = g;
    } else {
      r = CUDA_ERROR_INVALID_IMAGE;
    }
  }
  free(text);
  if (r) {
    m->o.live = 0;
    for (int i = 0; i < m->nfunctions; i++) m->functions[i]->o.live = 0;
    for (int i = 0; i < m->nglobals; i++) m->globals[i]->o.live = 0;
    return r;
  }
  *out = m;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(struct module** module, const void* image) { API(load_data(module, image)); }

static CUresult unload(struct module* module) {
  NEED_INIT;
  struct module* m = find(module, MODULE);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = wait_context(m->o.ctx, 1);
  m->o.live = 0;
  for (int i = 0; i < m->nfunctions; i++) m->functions[i]->o.live = 0;
  for (int i = 0; i < m->nglobals; i++) {
    m->globals[i]->o.live = 0;
    free(m->globals[i]->base);
  }
  return r;
}
CUresult cuModuleUnload(struct module* module) { API(unload(module)); }

static CUresult get_function(struct function** out, struct module* module, const char* name) {
  NEED_INIT;
  struct module* m = find(module, MODULE);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < m->nfunctions; i++)
    if (!strcmp(m->functions[i]->name, name)) {
      *out = m->functions[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult cuModuleGetFunction(struct function** out, struct module* module, const char* name) {
  API(get_function(out, module, name));
}

static CUresult function_count(unsigned* count, struct module* module) {
  NEED_INIT;
  struct module* m = find(module, MODULE);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = (unsigned)m->nfunctions;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunctionCount(unsigned* count, struct module* module) { API(function_count(count, module)); }

static CUresult enumerate_functions(struct function** out, unsigned n, struct module* module) {
  NEED_INIT;
  struct module* m = find(module, MODULE);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n && i < (unsigned)m->nfunctions; i++) out[i] = m->functions[i];
  return CUDA_SUCCESS;
}
CUresult cuModuleEnumerateFunctions(struct function** out, unsigned n, struct module* module) {
  API(enumerate_functions(out, n, module));
}

static CUresult func_load(struct function* function) {
  NEED_INIT;
  struct function* f = find(function, FUNCTION);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!f->loaded) note("cuFuncLoad %s", f->name);
  f->loaded = 1;
  return CUDA_SUCCESS;
}
CUresult cuFuncLoad(struct function* function) { API(func_load(function)); }

static CUresult get_global(CUdeviceptr* ptr, size_t* bytes, struct module* module, const char* name) {
  NEED_INIT;
  struct module* m = find(module, MODULE);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  struct memory* g = name ? module_global(m, name) : NULL;
  if (!g) return CUDA_ERROR_NOT_FOUND;
  if (ptr) *ptr = (uintptr_t)g->base;
  if (bytes) *bytes = g->size;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr* ptr, size_t* bytes, struct module* module, const char* name) {
  API(get_global(ptr, bytes, module, name));
}

static CUresult func_set_attribute(struct function* function, int attribute, int value) {
  NEED_INIT;
  struct function* f = find(function, FUNCTION);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (f->o.ctx->sticky) return f->o.ctx->sticky;
  if (attribute != 8) return CUDA_ERROR_INVALID_VALUE; /* MAX_DYNAMIC_SHARED_SIZE_BYTES only */
  note("cuFuncSetAttribute %s MAX_DYNAMIC_SHARED_SIZE_BYTES %d", f->name, value);
  if (value < 0 || value + behaviours[f->behaviour].static_shared > devices[f->o.ctx->device].shared_optin)
    return CUDA_ERROR_INVALID_VALUE;
  f->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(struct function* function, int attribute, int value) {
  API(func_set_attribute(function, attribute, value));
}

static CUresult stream_create(struct stream** out, unsigned flags) {
  NEED_CONTEXT;
  if (!out || flags > 1) return CUDA_ERROR_INVALID_VALUE;
  struct stream* s = make(STREAM, sizeof *s, current);
  s->flags = flags;
  *out = s;
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(struct stream** out, unsigned flags) { API(stream_create(out, flags)); }

static CUresult stream_synchronize(struct stream* stream) {
  NEED_INIT;
  struct stream* s = find(stream, STREAM);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  return wait_stream(s, NEVER);
}
CUresult cuStreamSynchronize(struct stream* stream) { API(stream_synchronize(stream)); }

/* Runs what has finished by now; NOT_READY while work remains, a kernel's error once seen. */
static CUresult stream_query(struct stream* stream) {
  NEED_INIT;
  struct stream* s = find(stream, STREAM);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = wait_stream(s, now_ns());
  if (r) return r;
  return s->head ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult cuStreamQuery(struct stream* stream) { API(stream_query(stream)); }

static CUresult stream_destroy(struct stream* stream) {
  NEED_INIT;
  struct stream* s = find(stream, STREAM);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = wait_stream(s, NEVER); /* queued work still completes */
  discard(s);
  s->o.live = 0;
  note("cuStreamDestroy");
  return r;
}
CUresult cuStreamDestroy_v2(struct stream* stream) { API(stream_destroy(stream)); }

static CUresult launch(struct function* function, const unsigned grid[3], const unsigned block[3], unsigned shared,
                       struct stream* stream, void** params, void** extra, int cooperative) {
  NEED_CONTEXT;
  struct function* f = find(function, FUNCTION);
  struct stream* s = find(stream, STREAM);
  if (!stream) return CUDA_ERROR_NOT_SUPPORTED; /* launches on the legacy default stream are not modelled */
  if (!f || !s) return CUDA_ERROR_INVALID_HANDLE;
  if (f->o.ctx != current || s->o.ctx != current) return CUDA_ERROR_INVALID_CONTEXT;
  const struct behaviour* b = &behaviours[f->behaviour];
  if (extra || (b->params > 0 && !params)) return CUDA_ERROR_INVALID_VALUE;
  uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
  uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2];
  if (!threads || threads > 1024 || block[0] > 1024 || block[1] > 1024 || block[2] > 64)
    return CUDA_ERROR_INVALID_VALUE;
  if (!blocks || grid[0] > 0x7fffffffu || grid[1] > 65535 || grid[2] > 65535) return CUDA_ERROR_INVALID_VALUE;
  if (shared > (unsigned)f->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if (cooperative) {
    uint64_t per_sm = 2048 / threads < 32 ? 2048 / threads : 32;
    if (!devices[current->device].cooperative) return CUDA_ERROR_NOT_SUPPORTED;
    if (blocks > per_sm * (uint64_t)devices[current->device].multiprocessors)
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  if (!f->loaded) {
    note("lazy load %s: waits for the context's work", f->name);
    CUresult r = wait_context(current, 1);
    if (r) return r;
    f->loaded = 1;
  }
  uint64_t duration = 5000;
  if (f->behaviour == SPIN) memcpy(&duration, params[0], 8);
  if (f->behaviour == HANG) duration = NEVER;
  struct op* op = enqueue(s, duration);
  op->function = f;
  op->shared = shared;
  op->cooperative = cooperative;
  memcpy(op->grid, grid, sizeof op->grid);
  memcpy(op->block, block, sizeof op->block);
  /* The driver copies each parameter's bytes (its C size, which it knows from the kernel)
   * before returning, from the pointer kernelParams[i] holds. */
  char hex[8 * 18 + 1] = "";
  for (int i = 0; i < b->params; i++) {
    memcpy(op->params[i], params[i], (size_t)b->sizes[i]);
    char* end = hex + strlen(hex);
    *end++ = ' ';
    for (int j = 0; j < b->sizes[i]; j++, end += 2) sprintf(end, "%02x", op->params[i][j]);
  }
  note("%s %s grid %u,%u,%u block %u,%u,%u shared %u params%s",
       cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel", f->name, grid[0], grid[1], grid[2], block[0],
       block[1], block[2], shared, hex);
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(struct function* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, struct stream* stream, void** params, void** extra) {
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  API(launch(f, grid, block, shared, stream, params, extra, 0));
}
CUresult cuLaunchCooperativeKernel(struct function* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared, struct stream* stream, void** params) {
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  API(launch(f, grid, block, shared, stream, params, NULL, 1));
}

static CUresult event_create(struct event** out, unsigned flags) {
  NEED_CONTEXT;
  if (!out || flags > 7) return CUDA_ERROR_INVALID_VALUE;
  struct event* e = make(EVENT, sizeof *e, current);
  e->flags = flags;
  *out = e;
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(struct event** out, unsigned flags) { API(event_create(out, flags)); }

static CUresult event_record(struct event* event, struct stream* stream) {
  NEED_INIT;
  struct event* e = find(event, EVENT);
  struct stream* s = find(stream, STREAM);
  if (!e || !s || e->o.ctx != s->o.ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (s->o.ctx->sticky) return s->o.ctx->sticky;
  uint64_t now = now_ns();
  e->recorded = 1;
  e->stream = s;
  e->time = s->tail_done > now ? s->tail_done : now; /* when the stream gets there */
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(struct event* event, struct stream* stream) { API(event_record(event, stream)); }

/* The stream's later work starts once the event's stream has reached it (the event may be
 * another context's): a queued wait of no work, done when the event is, that runs the
 * event's stream up to there first. An event never recorded is no wait. */
static CUresult stream_wait_event(struct stream* stream, struct event* event, unsigned flags) {
  NEED_CONTEXT;
  struct stream* s = find(stream, STREAM);
  struct event* e = find(event, EVENT);
  if (!s || !e) return CUDA_ERROR_INVALID_HANDLE;
  if (s->o.ctx != current) return CUDA_ERROR_INVALID_CONTEXT;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE; /* CU_EVENT_WAIT_DEFAULT only */
  note("cuStreamWaitEvent device %d waits for device %d%s", s->o.ctx->device, e->o.ctx->device,
       e->recorded ? "" : " (never recorded)");
  if (!e->recorded) return CUDA_SUCCESS;
  struct op* op = enqueue(s, 0);
  if (e->time > op->done) op->done = s->tail_done = e->time;
  op->after = e->stream;
  op->after_time = e->time;
  return CUDA_SUCCESS;
}
CUresult cuStreamWaitEvent(struct stream* stream, struct event* event, unsigned flags) {
  API(stream_wait_event(stream, event, flags));
}

static CUresult event_synchronize(struct event* event) {
  NEED_INIT;
  struct event* e = find(event, EVENT);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if (!e->recorded) return CUDA_SUCCESS;
  if (e->stream->o.live) return wait_stream(e->stream, e->time);
  return e->o.ctx->sticky;
}
CUresult cuEventSynchronize(struct event* event) { API(event_synchronize(event)); }

static CUresult event_destroy(struct event* event) {
  NEED_INIT;
  struct event* e = find(event, EVENT);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  e->o.live = 0;
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(struct event* event) { API(event_destroy(event)); }

static CUresult elapsed(float* ms, struct event* start, struct event* end, const char* call) {
  NEED_INIT;
  struct event* a = find(start, EVENT);
  struct event* b = find(end, EVENT);
  note("%s", call);
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_HANDLE;
  if (a->o.ctx->sticky) return a->o.ctx->sticky;
  if (!a->recorded || !b->recorded || (a->flags & 2) || (b->flags & 2)) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t now = now_ns();
  if (a->time > now || b->time > now) return CUDA_ERROR_NOT_READY;
  *ms = (float)((double)(int64_t)(b->time - a->time) / 1e6);
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float* ms, struct event* start, struct event* end) {
  API(elapsed(ms, start, end, "cuEventElapsedTime"));
}
CUresult cuEventElapsedTime_v2(float* ms, struct event* start, struct event* end) {
  API(elapsed(ms, start, end, "cuEventElapsedTime_v2"));
}

/* What was never released, once the process ends (only after a cuInit: the backend's probe
 * loads and unloads the library once before it initializes it). */
__attribute__((destructor)) static void at_exit(void) {
  if (!initialized) return;
  int live[EVENT + 1] = {0}, retains = 0;
  for (struct object* o = objects; o; o = o->next)
    if (o->live && !(o->kind == MEMORY && ((struct memory*)o)->global)) live[o->kind]++;
  for (int d = 0; d < MAX_DEVICES; d++) retains += contexts[d].retains;
  note("exit: allocations %d modules %d streams %d events %d retains %d", live[MEMORY], live[MODULE], live[STREAM],
       live[EVENT], retains);
}
