/* A stand-in libamdhip64.so for tests on machines without an AMD GPU.
 *
 * It implements the entry points backend-hip binds, with the ROCm signatures, over host
 * memory: one device, "kernels" that are C functions reading the launch's kernelParams
 * exactly as the real runtime does (one pointer per parameter), and module globals for
 * the fault record and the clock multiplier. It checks what a real runtime would refuse
 * (unknown device, bad copy kind, null handles) so that wiring mistakes in the Rust side
 * show up as errors.
 *
 * XBAR_FAKE_HIP_WALL_CLOCK sets what hipDeviceGetAttribute(hipDeviceAttributeWallClockRate)
 * answers: unset, 100000 (kHz); a number, that rate; "unknown", hipErrorInvalidValue (as
 * ROCm 5.2, which has no such attribute); "error:N", the error code N. */
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
  hipErrorNotSupported = 801,
};

static int current_device = -1;

hipError_t hipInit(unsigned flags) { return flags == 0 ? hipSuccess : hipErrorInvalidValue; }
hipError_t hipGetDeviceCount(int* count) {
  *count = 1;
  return hipSuccess;
}
hipError_t hipSetDevice(int device) {
  if (device != 0) return hipErrorInvalidDevice;
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
  if (device != 0) return hipErrorInvalidDevice;
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
  if (device != 0 || len < 1) return hipErrorInvalidValue;
  strncpy(name, "Fake AMD Instinct", (size_t)len - 1);
  name[len - 1] = 0;
  return hipSuccess;
}
/* Some layout, not ROCm's: the backend must find gcnArchName by its contents. */
hipError_t hipGetDevicePropertiesR0600(void* props, int device) {
  if (device != 0) return hipErrorInvalidDevice;
  char* p = props;
  memset(p, 0, 1472);
  strcpy(p, "Fake AMD Instinct");
  strcpy(p + 1160, "gfx942:sramecc+:xnack-");
  return hipSuccess;
}

hipError_t hipMalloc(void** ptr, size_t size) {
  if (current_device != 0) return hipErrorInvalidDevice;
  if (size == 0 || size > ((size_t)1 << 40)) return hipErrorOutOfMemory;
  *ptr = aligned_alloc(256, (size + 255) / 256 * 256);
  if (!*ptr) return hipErrorOutOfMemory;
  memset(*ptr, 0xab, size); /* the backend must zero it */
  return hipSuccess;
}
hipError_t hipFree(void* ptr) {
  free(ptr);
  return hipSuccess;
}
/* Memory shared with host threads: pinned host memory (this fake reports native host
 * atomics) and managed memory, both handed out as hipMalloc's; pinned memory is counted so
 * that freeing it with the wrong call shows. */
static int pinned_live = 0;
hipError_t hipHostMalloc(void** ptr, size_t size, unsigned flags) {
  if (!(flags & 0x2) || !(flags & 0x40000000)) return hipErrorInvalidValue; /* mapped, coherent */
  hipError_t r = hipMalloc(ptr, size);
  if (r == hipSuccess) ++pinned_live;
  return r;
}
hipError_t hipHostFree(void* ptr) {
  if (pinned_live == 0) return hipErrorInvalidValue;
  --pinned_live;
  free(ptr);
  return hipSuccess;
}
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
int xbar_fake_hip_pinned_live(void) { return pinned_live; }
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
  if (current_device != 0) return hipErrorInvalidDevice;
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
            : !strcmp(name, "clock") ? 4 : 0;
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

static hipError_t run(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned shared, void* stream, void** params, int cooperative) {
  struct function* f = function;
  if (!f || !stream) return hipErrorInvalidHandle;
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
  *stream = malloc(16);
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
    case 720: return "hipErrorCooperativeLaunchTooLarge";
    default: return "hipErrorUnknown";
  }
}
const char* hipGetErrorString(hipError_t error) { return error == hipErrorInvalidImage ? "invalid kernel image" : hipGetErrorName(error); }
