// xbarrier/config.hpp - which compiler and target we are on, and the build switches.
//
// One platform layer is chosen per compile:
//   XB_PLATFORM_CUDA    nvcc or clang in CUDA mode (both passes; device code needs __CUDA_ARCH__)
//   XB_PLATFORM_AMDGCN  clang/hipcc in HIP mode
//   XB_PLATFORM_HOST    any other C++17 compiler: kernels run on CPU threads (backend-host)
#pragma once

#if defined(__CUDACC__)
#define XB_PLATFORM_CUDA 1
#elif defined(__HIP__) || defined(__HIPCC__)
#define XB_PLATFORM_AMDGCN 1
#else
#define XB_PLATFORM_HOST 1
#endif

// Checked builds turn what CUDA calls undefined behaviour (bad counts, over-arrival, tx on
// the wrong barrier, deadlock) into a reported fault. Build scripts set XB_CHECKED
// explicitly; a bare compile follows NDEBUG like assert() does.
#ifndef XB_CHECKED
#ifdef NDEBUG
#define XB_CHECKED 0
#else
#define XB_CHECKED 1
#endif
#endif

// Checked builds bound every wait; a wait that outlives this many nanoseconds is reported
// as a deadlock (XB_FAULT_WAIT_TIMEOUT). The host backend takes the bound from the launch.
#ifndef XB_DEFAULT_WAIT_TIMEOUT_NS
#define XB_DEFAULT_WAIT_TIMEOUT_NS 10000000000ull
#endif

// The CUDA image variant (backend Variant): XB_EMULATED=1 compiles the portable protocol
// instead of the mbarrier lowering, so AMD's exact protocol runs on NVIDIA hardware.
#ifndef XB_EMULATED
#define XB_EMULATED 0
#endif

// The native lowering: block-scope barriers in shared memory become PTX mbarrier objects
// (arrivals, waits, tx-count, bulk copies) on sm_90 and later. Not in checked builds: the
// hardware traps on misuse (and poisons the context) where the protocol can report it. sm_80
// has mbarrier but no tx-count, so it runs the protocol, which carries the tx-count.
#if defined(XB_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define XB_MBARRIER_ISA 1  // the instructions of platform/cuda_mbarrier.hpp exist here
#else
#define XB_MBARRIER_ISA 0
#endif
#if XB_MBARRIER_ISA && !XB_CHECKED && !XB_EMULATED
#define XB_NATIVE_MBARRIER 1
#else
#define XB_NATIVE_MBARRIER 0
#endif

// Checked builds of the native variant on sm_90: the protocol checks every block-scope
// barrier in shared memory, and shadow mbarriers carry its synchronization, so that
// compute-sanitizer's racecheck and synccheck, which model mbarriers and not atomics on a
// word, see what orders the data (checked_engine.hpp).
// XB_SHADOW_MODEL=1 runs the same engine in checked host builds, on a software model of
// the mbarrier (platform/mbarrier_model.hpp), to test its logic without a GPU.
#if XB_MBARRIER_ISA && XB_CHECKED && !XB_EMULATED
#define XB_CHECKED_MBARRIER 1
#elif defined(XB_PLATFORM_HOST) && defined(XB_SHADOW_MODEL) && XB_SHADOW_MODEL && XB_CHECKED
#define XB_CHECKED_MBARRIER 1
#else
#define XB_CHECKED_MBARRIER 0
#endif

// Probe knobs of the checked shadow-mbarrier engine (bench/experiments/checked_copy_tx.cu):
// XB_CHECKED_TRACE(event, word, op, parity) is called at each step of each thread, and
// XB_CHECKED_BULK_COPY=0 makes memcpy_async_tx copy with the calling thread.
#ifndef XB_CHECKED_TRACE
#define XB_CHECKED_TRACE(event, w, op, parity) ((void)0)
#endif
#ifndef XB_CHECKED_BULK_COPY
#define XB_CHECKED_BULK_COPY 1
#endif

// HIP without ROCm headers (clang -x hip -nogpuinc): the attributes hip_runtime.h would
// define. With the headers included first, theirs stay.
#if defined(XB_PLATFORM_AMDGCN)
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __host__
#define __host__ __attribute__((host))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif
#endif

#if defined(XB_PLATFORM_CUDA) || defined(XB_PLATFORM_AMDGCN)
#define XB_DEVICE __device__
#define XB_INLINE __device__ __forceinline__
#define XB_HOST_DEVICE __host__ __device__
#else
#define XB_DEVICE
#define XB_INLINE inline __attribute__((always_inline))
#define XB_HOST_DEVICE
#endif

#if defined(__GNUC__) || defined(__clang__)
#define XB_LIKELY(x) __builtin_expect(!!(x), 1)
#define XB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define XB_LIKELY(x) (x)
#define XB_UNLIKELY(x) (x)
#endif
