// xbarrier/config.hpp - which compiler and target we are on, and the build switches.
//
// One platform layer is chosen per compile (platform.hpp includes it):
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
// a barrier outside shared memory, deadlock) into a reported fault. Build scripts set
// XB_CHECKED explicitly; a bare compile follows NDEBUG like assert() does.
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

// Sanitizer builds: checked CUDA code meant for compute-sanitizer's racecheck and synccheck,
// which order shared memory through hardware barriers only, not through atomics on a word.
// On sm_90 every block-scope barrier's protocol is mirrored on shadow mbarriers
// (engine_sm90_checked.hpp), whose arrivals take one compare-and-swap per thread, and every
// wait loop sleeps long (up to 1 ms a poll), because under racecheck lanes spinning in wait
// loops can starve a diverged warp-mate that still has work to do. A round trip then costs
// thousands of times a release one, so it is off by default: build with XBAR_SANITIZER=1
// (the build helper passes it on) to run checked code under a sanitizer.
#ifndef XB_SANITIZER
#define XB_SANITIZER 0
#endif

// The CUDA image variants (backend Variant): XB_EMULATED=1 compiles the portable protocol
// instead of the mbarrier lowering, so AMD's protocol runs on NVIDIA hardware (with
// XB_GROUP_LANES=1 below, AMD's lane groups too).
#ifndef XB_EMULATED
#define XB_EMULATED 0
#endif

// Lane groups on CUDA (lane_group.hpp): XB_GROUP_LANES=1 makes the lanes of a warp that
// arrive together one group, whose leader makes the group's atomic, as an AMDGPU wave's
// lanes always are. On NVIDIA that costs more than it saves (the agreement test, gather and
// broadcast, where ptxas already combines a warp's atomics on one word), so release builds
// leave it off and the CUDA image variant `grouped` turns it on, to run AMD's grouped path
// on NVIDIA hardware. Checked builds group: they then report a warp that straddles two
// phases, as an AMD wave's checked build and the native mbarrier do.
#ifndef XB_GROUP_LANES
#define XB_GROUP_LANES XB_CHECKED
#endif

// The native lowering: block-scope barriers in shared memory become PTX mbarrier objects
// (arrivals, waits, tx-count, bulk copies) on sm_90 and later (engine_sm90_mbarrier.hpp).
// Not in checked builds: the hardware traps on misuse (and poisons the context) where the
// protocol can report it. sm_80 has mbarrier but no tx-count, so it runs the protocol,
// which carries the tx-count.
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

// Sanitizer builds of the native variant on sm_90: the protocol checks every block-scope
// barrier in shared memory, and shadow mbarriers carry its synchronization, so that
// compute-sanitizer's racecheck and synccheck, which model mbarriers and not atomics on a
// word, see what orders the data (engine_sm90_checked.hpp). Other checked builds run the
// checked protocol alone.
// XB_SHADOW_MODEL=1 runs the same engine in checked host builds, on a software model of
// the mbarrier (platform/host_mbarrier_model.hpp), to test its logic without a GPU.
#if XB_MBARRIER_ISA && XB_CHECKED && XB_SANITIZER && !XB_EMULATED
#define XB_CHECKED_MBARRIER 1
#elif defined(XB_PLATFORM_HOST) && defined(XB_SHADOW_MODEL) && XB_SHADOW_MODEL && XB_CHECKED
#define XB_CHECKED_MBARRIER 1
#else
#define XB_CHECKED_MBARRIER 0
#endif

// Function qualifiers: device code on the GPU targets, plain inline functions on the host.
// AMDGPU spells the attributes out, so that no ROCm header is needed (clang -nogpuinc).
#if defined(XB_PLATFORM_CUDA)
#define XB_DEVICE __device__
#define XB_INLINE __device__ __forceinline__
#define XB_HOST_DEVICE __host__ __device__
#elif defined(XB_PLATFORM_AMDGCN)
#define XB_DEVICE __attribute__((device))
#define XB_INLINE __attribute__((device)) inline __attribute__((always_inline))
#define XB_HOST_DEVICE __attribute__((host)) __attribute__((device))
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
