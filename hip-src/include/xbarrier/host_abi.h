/* xbarrier/host_abi.h - the structures the host backend's Rust runtime shares with kernels
 * compiled for the CPU. Plain C, repr(C) on the Rust side (backend-host/src/abi.rs); the
 * runtime compares sizes at load time (xb_host_abi) so a mismatch is an error, not UB. */
#ifndef XBARRIER_HOST_ABI_H
#define XBARRIER_HOST_ABI_H

#include <stdint.h>
#include "abi.h"

#define XB_HOST_ABI_VERSION 2
#define XB_HOST_MAX_INT_ARGS 6   /* integer/pointer arguments passed in registers */
#define XB_HOST_MAX_FLOAT_ARGS 8 /* floating-point arguments passed in registers */
#define XB_HOST_MAX_STACK_ARGS 10 /* further arguments, passed on the stack */

/* One per launch, shared by every thread of the grid. */
typedef struct xb_host_launch {
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t wait_timeout_ns;  /* checked builds: bound on every wait, 0 = unbounded */
  uint32_t abort;            /* atomic; nonzero makes every wait unwind its kernel thread */
  uint32_t fault_claimed;    /* atomic; the first faulting thread writes `fault` */
  xb_fault_record fault;
  void* scheduler;                      /* opaque to C++ */
  void (*yield_fn)(void* fiber);        /* suspend the calling fiber */
  void (*notify_fn)(void* scheduler);   /* a barrier word changed: wake parked workers */
} xb_host_launch;

/* One per running block. */
typedef struct xb_host_block {
  uint32_t index[3];
  uint32_t threads;
  uint8_t* dynamic_shared;
  uint64_t dynamic_shared_bytes;
  uint64_t syncthreads_word; /* the barrier behind __syncthreads(), see xb_host_block_init */
} xb_host_block;

/* One per kernel thread (one fiber). */
typedef struct xb_host_thread {
  xb_host_launch* launch;
  xb_host_block* block;
  void* fiber;
  uint32_t index[3];
  uint32_t linear;
  uint32_t polled;  /* set by relax(): the thread polls memory no publish announces; the OS
                       thread that resumes it reads and clears it */
} xb_host_thread;

#endif
