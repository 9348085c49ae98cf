/* xbarrier/abi.h - numbers shared by the C++ device library and the Rust host side.
 *
 * Plain C so that every compiler (nvcc, clang -x hip, the host C++ compiler) and the
 * Rust mirror (barrier-api/src/fault.rs, checked against this file by a unit test) read
 * the same values. Change a number here and the Rust test fails until both sides agree. */
#ifndef XBARRIER_ABI_H
#define XBARRIER_ABI_H

#include <stdint.h>

#define XB_ABI_VERSION 1

/* What went wrong (xb_fault_record.kind). */
#define XB_FAULT_NONE 0
#define XB_FAULT_INIT_COUNT 1     /* init(expected) with expected outside 1..max() */
#define XB_FAULT_UPDATE_RANGE 2   /* arrive(update) with update outside 1..max() */
#define XB_FAULT_OVER_ARRIVAL 3   /* update greater than the arrivals still pending */
#define XB_FAULT_TX_RANGE 4       /* a tx update outside 0..2^20-1 */
#define XB_FAULT_TX_OVERFLOW 5    /* the phase's tx-count left -(2^20-1)..2^20-1 */
#define XB_FAULT_TX_SCOPE 6       /* unused: a tx API on a barrier that is not block scope does not compile */
#define XB_FAULT_TX_NOT_SHARED 7  /* a tx API on a barrier outside shared memory */
#define XB_FAULT_DROP_EMPTY 8     /* arrive_and_drop on a barrier that expects nobody */
#define XB_FAULT_WAIT_TIMEOUT 9   /* a wait outlived the checked-build bound: a deadlock */
#define XB_FAULT_COPY_ARGS 10     /* memcpy_async_tx: size too large, or a pointer in the wrong memory */
#define XB_FAULT_COPY_ALIGN 11    /* a copy's pointers or size break its alignment (limit: the alignment) */
#define XB_FAULT_COPY_OVERLAP 12  /* a copy's source and destination overlap */
#define XB_FAULT_STALE_TOKEN 13   /* a wait on a token two or more phases old (value: its phase) */

/* Which call it was (xb_fault_record.op). */
#define XB_OP_INIT 1
#define XB_OP_ARRIVE 2
#define XB_OP_ARRIVE_AND_DROP 3
#define XB_OP_ARRIVE_TX 4
#define XB_OP_EXPECT_TX 5
#define XB_OP_COMPLETE_TX 6
#define XB_OP_WAIT 7
#define XB_OP_MEMCPY_ASYNC_TX 8
#define XB_OP_SYNCTHREADS 9
#define XB_OP_MEMCPY_ASYNC 10

/* The first fault of a launch, written by the faulting thread. The barrier's state is
 * decoded on the device side so that the host needs no knowledge of the word layout. */
typedef struct xb_fault_record {
  uint32_t kind;
  uint32_t op;
  uint32_t block[3];
  uint32_t thread[3];
  uint64_t barrier;       /* address of the barrier object */
  int64_t value;          /* the offending argument (or elapsed ns for a timeout) */
  int64_t limit;          /* the bound it broke */
  int64_t pending;        /* arrivals still pending in the current phase, -1 if unknown */
  int64_t tx;             /* tx-count of the current phase */
  int64_t expected;       /* expected count of later phases */
  uint32_t phase_parity;  /* parity of the phase in progress */
  uint32_t scope;         /* xb::thread_scope of the barrier */
} xb_fault_record;

#endif
