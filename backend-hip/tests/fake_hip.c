/* A stand-in libamdhip64.so for tests on machines without an AMD GPU.
 *
 * It implements the entry points backend-hip binds, with the ROCm signatures, over host
 * memory: one device (or two, alike), "kernels" that are C functions reading the launch's
 * kernelParams exactly as the real runtime does (one pointer per parameter), and module
 * globals for the fault record and the clock multiplier. It checks what a real runtime
 * would refuse (unknown device, bad copy kind, null handles, freeing what it did not
 * allocate) so that wiring mistakes in the Rust side show up as errors. Kernels run when
 * launched, on the device of their stream.
 *
 * Peer access, as ROCm's hip_peer.cpp does it: each device keeps the set of devices whose
 * memory its kernels may use. hipDeviceEnablePeerAccess(peer, 0) adds `peer` to the current
 * device's set (one way); it answers hipErrorPeerAccessAlreadyEnabled the second time and
 * hipErrorInvalidDevice where hipDeviceCanAccessPeer answers 0, for the device itself too.
 * The `add` kernel touches memory of its stream's device or of one in that device's set, or
 * pinned host memory (hipHostMalloc maps it into every device), else its launch fails with
 * hipErrorIllegalAddress. hipDeviceGetP2PAttribute answers
 * PerformanceRank 0, AccessSupported, NativeAtomicSupported, HipArrayAccessSupported, and
 * refuses one device as both ends (hipErrorInvalidDevice). Built with
 * -DXBAR_FAKE_HIP_NO_P2P, it lacks the three entry points.
 *
 * hipStreamWaitEvent(stream, event, 0) checks its handles and flags and returns: kernels ran
 * when launched, so the work before any event has ended already. Built with
 * -DXBAR_FAKE_HIP_NO_STREAM_WAIT, it lacks the entry point.
 *
 * Settings: XBAR_FAKE_HIP_WALL_CLOCK sets what
 * hipDeviceGetAttribute(hipDeviceAttributeWallClockRate) answers: unset, 100000 (kHz); a
 * number, that rate; "unknown", hipErrorInvalidValue (as ROCm 5.2, which has no such
 * attribute); "error:N", the error code N. XBAR_FAKE_HIP_DEVICES: 1 (the default) or 2.
 * XBAR_FAKE_HIP_P2P, the link between the two: "full" (the default: peer access with native
 * atomics), "no-atomics" (peer access, NativeAtomicSupported 0), "none" (no peer access).
 *
 * For the tests: xbar_fake_hip_live_allocations and xbar_fake_hip_pinned_live count what
 * is allocated, xbar_fake_hip_calls(name) how often a peer access entry point or
 * hipStreamWaitEvent was called,
 * xbar_fake_hip_peer_enabled(device, peer) whether `device` enabled access to `peer`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int hipError_t;
enum {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorInvalidMemcpyDirection = 21,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidImage = 200,
  hipErrorInvalidHandle = 400,
  hipErrorNotFound = 500,
  hipErrorIllegalAddress = 700,
  hipErrorPeerAccessAlreadyEnabled = 704,
  hipErrorNotSupported = 801,
};

enum { MAX_DEVICES = 2 };
static int current_device = -1;

static int device_count(void) {
  const char* setting = getenv("XBAR_FAKE_HIP_DEVICES");
  int n = setting && *setting ? atoi(setting) : 1;
  return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}
static int valid(int device) { return device >= 0 && device < device_count(); }

hipError_t hipInit(unsigned flags) { return flags == 0 ? hipSuccess : hipErrorInvalidValue; }
hipError_t hipGetDeviceCount(int* count) {
  *count = device_count();
  return hipSuccess;
}
hipError_t hipSetDevice(int device) {
  if (!valid(device)) return hipErrorInvalidDevice;
  current_device = device;
  return hipSuccess;
}
hipError_t hipRuntimeGetVersion(int* version) {
  *version = 60342134;
  return hipSuccess;
}
hipError_t hipDriverGetVersion(int* version) {
  *version = 60342133;
  return hipSuccess;
}
/* hipDeviceAttributeWallClockRate, as XBAR_FAKE_HIP_WALL_CLOCK says (see the top). */
static hipError_t wall_clock_rate(int* value) {
  const char* setting = getenv("XBAR_FAKE_HIP_WALL_CLOCK");
  int code = 0;
  if (!setting) {
    *value = 100000;
    return hipSuccess;
  }
  if (!strcmp(setting, "unknown")) return hipErrorInvalidValue;
  if (sscanf(setting, "error:%d", &code) == 1) return code;
  *value = atoi(setting);
  return hipSuccess;
}
hipError_t hipDeviceGetAttribute(int* value, int attribute, int device) {
  if (!valid(device)) return hipErrorInvalidDevice;
  switch (attribute) {
    case 9: *value = 0; break;       /* ConcurrentManagedAccess (xnack-: no) */
    case 10: *value = 1; break;      /* CooperativeLaunch */
    case 15: *value = 1; break;      /* HostNativeAtomicSupported */
    case 56: *value = 1024; break;   /* MaxThreadsPerBlock */
    case 63: *value = 104; break;    /* MultiprocessorCount */
    case 74: *value = 65536; break;  /* MaxSharedMemoryPerBlock */
    case 87: *value = 64; break;     /* WarpSize */
    case 10017: return wall_clock_rate(value);
    default: return hipErrorInvalidValue;
  }
  return hipSuccess;
}
hipError_t hipDeviceGetName(char* name, int len, int device) {
  if (!valid(device) || len < 1) return hipErrorInvalidValue;
  strncpy(name, "Fake AMD Instinct", (size_t)len - 1);
  name[len - 1] = 0;
  return hipSuccess;
}
/* Some layout, not ROCm's: the backend must find gcnArchName by its contents. */
hipError_t hipGetDevicePropertiesR0600(void* props, int device) {
  if (!valid(device)) return hipErrorInvalidDevice;
  char* p = props;
  memset(p, 0, 1472);
  strcpy(p, "Fake AMD Instinct");
  strcpy(p + 1160, "gfx942:sramecc+:xnack-");
  return hipSuccess;
}

/* Every live allocation, with the device current when it was made. */
struct allocation {
  struct allocation* next;
  unsigned char* base;
  size_t size;
  int device;
  int pinned; /* hipHostMalloc's: freed by hipHostFree, not hipFree */
};
static struct allocation* allocations;

static hipError_t allocate(void** ptr, size_t size, int pinned) {
  if (!valid(current_device)) return hipErrorInvalidDevice;
  if (size == 0 || size > ((size_t)1 << 40)) return hipErrorOutOfMemory;
  struct allocation* a = calloc(1, sizeof *a);
  a->base = aligned_alloc(256, (size + 255) / 256 * 256);
  if (!a->base) {
    free(a);
    return hipErrorOutOfMemory;
  }
  memset(a->base, 0xab, size); /* the backend must zero it */
  a->size = size;
  a->device = current_device;
  a->pinned = pinned;
  a->next = allocations;
  allocations = a;
  *ptr = a->base;
  return hipSuccess;
}
/* Frees the allocation at `ptr` of the kind the call frees. */
static hipError_t release(void* ptr, int pinned) {
  for (struct allocation** at = &allocations; *at; at = &(*at)->next) {
    struct allocation* a = *at;
    if (a->base == ptr && a->pinned == pinned) {
      *at = a->next;
      free(a->base);
      free(a);
      return hipSuccess;
    }
  }
  return hipErrorInvalidValue;
}
/* The allocation that holds ptr..+bytes, or NULL. */
static struct allocation* holding(const void* ptr, size_t bytes) {
  for (struct allocation* a = allocations; a; a = a->next) {
    uintptr_t base = (uintptr_t)a->base, p = (uintptr_t)ptr;
    if (p >= base && p - base <= a->size && bytes <= a->size - (p - base)) return a;
  }
  return NULL;
}
int xbar_fake_hip_live_allocations(void) {
  int n = 0;
  for (struct allocation* a = allocations; a; a = a->next) n++;
  return n;
}

hipError_t hipMalloc(void** ptr, size_t size) { return allocate(ptr, size, 0); }
hipError_t hipFree(void* ptr) { return ptr ? release(ptr, 0) : hipSuccess; }
/* Memory shared with host threads: pinned host memory (this fake reports native host
 * atomics) and managed memory, both handed out as hipMalloc's; pinned memory is told apart
 * so that freeing it with the wrong call shows. */
hipError_t hipHostMalloc(void** ptr, size_t size, unsigned flags) {
  if (!(flags & 0x1) || !(flags & 0x2) || !(flags & 0x40000000)) return hipErrorInvalidValue; /* portable, mapped, coherent */
  return allocate(ptr, size, 1);
}
hipError_t hipHostFree(void* ptr) { return release(ptr, 1); }
/* Where the device maps pinned memory: at the host's address, unless a test moves it
 * (xbar_fake_hip_set_device_pointer_offset) to stand for a runtime without unified
 * addressing. */
static long device_pointer_offset = 0;
void xbar_fake_hip_set_device_pointer_offset(long offset) { device_pointer_offset = offset; }
hipError_t hipHostGetDevicePointer(void** dptr, void* hptr, unsigned flags) {
  if (!dptr || !hptr || flags != 0) return hipErrorInvalidValue;
  *dptr = (char*)hptr + device_pointer_offset;
  return hipSuccess;
}
hipError_t hipMallocManaged(void** ptr, size_t size, unsigned flags) {
  return flags == 1 ? hipMalloc(ptr, size) : hipErrorInvalidValue;
}
int xbar_fake_hip_pinned_live(void) {
  int n = 0;
  for (struct allocation* a = allocations; a; a = a->next) n += a->pinned;
  return n;
}

/* ---- peer access ---- */

/* peer_enabled[d][p]: kernels on device d may use device p's memory. */
static int peer_enabled[MAX_DEVICES][MAX_DEVICES];
int xbar_fake_hip_peer_enabled(int device, int peer) {
  return valid(device) && valid(peer) && peer_enabled[device][peer];
}
/* Whether kernels on `device` may use memory of `owner`. */
static int reaches(int device, int owner) { return device == owner || peer_enabled[device][owner]; }

static int can_access_calls, attribute_calls, enable_calls, stream_wait_calls;
int xbar_fake_hip_calls(const char* name) {
  return !strcmp(name, "hipDeviceCanAccessPeer")      ? can_access_calls
         : !strcmp(name, "hipDeviceGetP2PAttribute")  ? attribute_calls
         : !strcmp(name, "hipDeviceEnablePeerAccess") ? enable_calls
         : !strcmp(name, "hipStreamWaitEvent")        ? stream_wait_calls
                                                      : -1;
}

#ifndef XBAR_FAKE_HIP_NO_P2P
/* The link between the two devices (XBAR_FAKE_HIP_P2P). */
enum link { LINK_NONE, LINK_NO_ATOMICS, LINK_FULL };
static enum link peer_link(void) {
  const char* how = getenv("XBAR_FAKE_HIP_P2P");
  if (!how || !*how || !strcmp(how, "full")) return LINK_FULL;
  if (!strcmp(how, "no-atomics")) return LINK_NO_ATOMICS;
  if (!strcmp(how, "none")) return LINK_NONE;
  fprintf(stderr, "fake libamdhip64: XBAR_FAKE_HIP_P2P=%s is none of full, no-atomics, none\n", how);
  abort();
}
/* Not a peer of itself, as ROCm's canAccessPeer says. */
static int can_access(int device, int peer) { return device != peer && peer_link() != LINK_NONE; }

hipError_t hipDeviceCanAccessPeer(int* can, int device, int peer) {
  ++can_access_calls;
  if (!can) return hipErrorInvalidValue;
  if (!valid(device) || !valid(peer)) return hipErrorInvalidDevice;
  *can = can_access(device, peer);
  return hipSuccess;
}
hipError_t hipDeviceGetP2PAttribute(int* value, int attr, int src, int dst) {
  ++attribute_calls;
  if (!value) return hipErrorInvalidValue;
  if (src == dst || !valid(src) || !valid(dst)) return hipErrorInvalidDevice;
  switch (attr) {
    case 0: *value = 0; break;                              /* hipDevP2PAttrPerformanceRank */
    case 1: *value = can_access(src, dst); break;           /* hipDevP2PAttrAccessSupported */
    case 2: *value = peer_link() == LINK_FULL; break;       /* hipDevP2PAttrNativeAtomicSupported */
    case 3: *value = can_access(src, dst); break;           /* hipDevP2PAttrHipArrayAccessSupported */
    default: return hipErrorInvalidValue;
  }
  return hipSuccess;
}
hipError_t hipDeviceEnablePeerAccess(int peer, unsigned flags) {
  ++enable_calls;
  if (flags != 0) return hipErrorInvalidValue;
  if (!valid(current_device) || !valid(peer) || !can_access(current_device, peer)) return hipErrorInvalidDevice;
  if (peer_enabled[current_device][peer]) return hipErrorPeerAccessAlreadyEnabled;
  peer_enabled[current_device][peer] = 1;
  return hipSuccess;
}
#endif
hipError_t hipMemset(void* dst, int value, size_t size) {
  memset(dst, value, size);
  return hipSuccess;
}
hipError_t hipMemcpy(void* dst, const void* src, size_t size, int kind) {
  if (kind != 1 && kind != 2) return hipErrorInvalidMemcpyDirection;
  memcpy(dst, src, size);
  return hipSuccess;
}
/* Streams run their work when it is enqueued, so an asynchronous copy is done on return. */
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size, int kind, void* stream) {
  if (!stream) return hipErrorInvalidHandle;
  if (kind != 3) return hipErrorInvalidMemcpyDirection; /* the backend copies device to device only */
  memmove(dst, src, size);
  return hipSuccess;
}

struct module {
  int has_slot;
  unsigned char slot[88]; /* xb_fault_record */
  int has_clock;
  uint64_t clock; /* xb_clock_ns_per_tick_q32, initialized as the compiled module's is */
};
struct function {
  struct module* module;
  int which;
};

hipError_t hipModuleLoadData(void** module, const void* image) {
  const char* text = image;
  if (!valid(current_device)) return hipErrorInvalidDevice;
  if (((uintptr_t)image & 7) != 0 || strncmp(text, "FAKE", 4) != 0) return hipErrorInvalidImage;
  struct module* m = calloc(1, sizeof *m);
  m->has_slot = strstr(text, "xb_fault_record_slot") != NULL;
  m->has_clock = strstr(text, "xb_clock_ns_per_tick_q32") != NULL;
  m->clock = (uint64_t)10 << 32; /* 100 MHz */
  *module = m;
  return hipSuccess;
}
hipError_t hipModuleUnload(void* module) {
  if (!module) return hipErrorInvalidHandle;
  free(module);
  return hipSuccess;
}
hipError_t hipModuleGetFunction(void** function, void* module, const char* name) {
  if (!module) return hipErrorInvalidHandle;
  int which = !strcmp(name, "echo") ? 1 : !strcmp(name, "fault") ? 2 : !strcmp(name, "spin") ? 3
            : !strcmp(name, "clock") ? 4 : !strcmp(name, "add") ? 5 : 0;
  if (!which) return hipErrorNotFound;
  struct function* f = malloc(sizeof *f); /* leaked, as a runtime's would live with the module */
  f->module = module;
  f->which = which;
  *function = f;
  return hipSuccess;
}
hipError_t hipModuleGetGlobal(void** ptr, size_t* bytes, void* module, const char* name) {
  struct module* m = module;
  if (!m) return hipErrorInvalidHandle;
  if (m->has_slot && !strcmp(name, "xb_fault_record_slot")) {
    *ptr = m->slot;
    *bytes = sizeof m->slot;
    return hipSuccess;
  }
  if (m->has_clock && !strcmp(name, "xb_clock_ns_per_tick_q32")) {
    *ptr = &m->clock;
    *bytes = sizeof m->clock;
    return hipSuccess;
  }
  return hipErrorNotFound;
}

struct stream {
  int device;
};

static hipError_t run(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned shared, void* stream, void** params, int cooperative) {
  struct function* f = function;
  struct stream* s = stream;
  if (!f || !s) return hipErrorInvalidHandle;
  if (cooperative && (uint64_t)gx * gy * gz > 104) return 720; /* CooperativeLaunchTooLarge */
  switch (f->which) {
    case 1: { /* echo(uint64_t* out, unsigned a, float b, uint64_t c, double d, int e) */
      uint64_t* out = *(uint64_t**)params[0];
      uint32_t b;
      memcpy(&b, params[2], 4);
      out[0] = *(uint32_t*)params[1];
      out[1] = b;
      out[2] = *(uint64_t*)params[3];
      memcpy(&out[3], params[4], 8);
      out[4] = (uint64_t)(int64_t) * (int32_t*)params[5];
      out[5] = (uint64_t)gx * gy * gz;
      out[6] = (uint64_t)bx * by * bz;
      out[7] = shared;
      out[8] = (uint64_t)cooperative;
      return hipSuccess;
    }
    case 2: { /* fault(unsigned kind): thread 3 over-arrives */
      unsigned char* slot = f->module->slot;
      uint32_t op = 2, thread = 3, kind = *(uint32_t*)params[0];
      int64_t value = 5, limit = 2;
      memcpy(slot + 4, &op, 4);
      memcpy(slot + 20, &thread, 4);
      memcpy(slot + 40, &value, 8);
      memcpy(slot + 48, &limit, 8);
      memcpy(slot + 0, &kind, 4);
      return hipSuccess;
    }
    case 3: /* spin(uint64_t ns) */
      usleep((useconds_t)(*(uint64_t*)params[0] / 1000));
      return hipSuccess;
    case 4: /* clock(uint64_t* out): the multiplier the module's now_ns() would convert with */
      **(uint64_t**)params[0] = f->module->clock;
      return hipSuccess;
    case 5: { /* add(float* data, unsigned n, float f): data[i] += f for i < n */
      float* data = *(float**)params[0];
      uint32_t n = *(uint32_t*)params[1];
      float add = *(float*)params[2];
      struct allocation* a = holding(data, (size_t)n * sizeof(float));
      if (!a || (!a->pinned && !reaches(s->device, a->device))) return hipErrorIllegalAddress;
      for (uint32_t i = 0; i < n; i++) data[i] += add;
      return hipSuccess;
    }
  }
  return hipErrorInvalidHandle;
}
hipError_t hipModuleLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  if (extra) return hipErrorNotSupported;
  return run(f, gx, gy, gz, bx, by, bz, shared, stream, params, 0);
}
hipError_t hipModuleLaunchCooperativeKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                            unsigned by, unsigned bz, unsigned shared, void* stream,
                                            void** params) {
  return run(f, gx, gy, gz, bx, by, bz, shared, stream, params, 1);
}

hipError_t hipStreamCreate(void** stream) {
  if (!valid(current_device)) return hipErrorInvalidDevice;
  struct stream* s = malloc(sizeof *s);
  s->device = current_device;
  *stream = s;
  return hipSuccess;
}
hipError_t hipStreamSynchronize(void* stream) { return stream ? hipSuccess : hipErrorInvalidHandle; }
/* Launches run when made: a stream is always drained. */
hipError_t hipStreamQuery(void* stream) { return stream ? hipSuccess : hipErrorInvalidHandle; }
hipError_t hipStreamDestroy(void* stream) {
  if (!stream) return hipErrorInvalidHandle;
  free(stream);
  return hipSuccess;
}
hipError_t hipEventCreate(void** event) {
  *event = calloc(1, sizeof(double));
  return hipSuccess;
}
hipError_t hipEventRecord(void* event, void* stream) {
  struct timespec t;
  if (!event || !stream) return hipErrorInvalidHandle;
  clock_gettime(CLOCK_MONOTONIC, &t);
  *(double*)event = (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
  return hipSuccess;
}
hipError_t hipEventSynchronize(void* event) { return event ? hipSuccess : hipErrorInvalidHandle; }
#ifndef XBAR_FAKE_HIP_NO_STREAM_WAIT
/* Launches ran when made: the event's work has ended, so there is nothing to wait for. */
hipError_t hipStreamWaitEvent(void* stream, void* event, unsigned flags) {
  ++stream_wait_calls;
  if (!stream || !event) return hipErrorInvalidHandle;
  if (flags != 0) return hipErrorInvalidValue;
  return valid(((struct stream*)stream)->device) ? hipSuccess : hipErrorInvalidHandle;
}
#endif
hipError_t hipEventElapsedTime(float* ms, void* start, void* end) {
  if (!start || !end) return hipErrorInvalidHandle;
  *ms = (float)((*(double*)end - *(double*)start) * 1e3);
  return hipSuccess;
}
hipError_t hipEventDestroy(void* event) {
  free(event);
  return hipSuccess;
}

const char* hipGetErrorName(hipError_t error) {
  switch (error) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidImage: return "hipErrorInvalidImage";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorNotFound: return "hipErrorNotFound";
    case hipErrorIllegalAddress: return "hipErrorIllegalAddress";
    case hipErrorPeerAccessAlreadyEnabled: return "hipErrorPeerAccessAlreadyEnabled";
    case 720: return "hipErrorCooperativeLaunchTooLarge";
    default: return "hipErrorUnknown";
  }
}
const char* hipGetErrorString(hipError_t error) { return error == hipErrorInvalidImage ? "invalid kernel image" : hipGetErrorName(error); }
