//! Barrier faults reported by kernels in checked builds (numbers from `xbarrier/abi.h`).

use std::fmt;

/// What went wrong (`XB_FAULT_*`).
///
/// ```
/// use xbarrier_api::FaultKind;
/// assert_eq!(FaultKind::from_code(3), FaultKind::OverArrival);
/// assert_eq!(FaultKind::OverArrival.abi_name(), "XB_FAULT_OVER_ARRIVAL");
/// // A newer device library's code is kept, not lost.
/// assert_eq!(FaultKind::from_code(99), FaultKind::Unknown(99));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// `init(expected)` with `expected` outside `1..=max()`.
    InitCount,
    /// An arrival update outside `1..=max()`.
    UpdateRange,
    /// More arrivals than the phase still expects.
    OverArrival,
    /// A tx update outside `0..=2^20-1`.
    TxRange,
    /// The phase's tx-count left `-(2^20-1)..=2^20-1`.
    TxOverflow,
    /// A tx API on a barrier that is not block scope. Not raised any more: such a call does
    /// not compile (`barrier_arrive_tx` and the others take only block-scope barriers); the
    /// code stays reserved in `abi.h`.
    TxScope,
    /// A tx API on a barrier outside shared memory.
    TxNotShared,
    /// `arrive_and_drop` on a barrier that expects nobody.
    DropEmpty,
    /// A wait outlived the checked-build bound: a deadlock.
    WaitTimeout,
    /// `memcpy_async_tx` with a size above the tx limit, a destination outside shared memory
    /// or a source in shared memory.
    CopyArgs,
    /// A copy whose pointers or size break its alignment (`limit`: the alignment).
    CopyAlign,
    /// A copy whose source and destination overlap.
    CopyOverlap,
    /// A wait on a token two or more phases old (`value`: the token's phase, `limit`: the
    /// earliest phase the barrier can be in).
    StaleToken,
    /// A code this build does not know.
    Unknown(u32),
}

impl FaultKind {
    /// From the `XB_FAULT_*` number.
    pub fn from_code(code: u32) -> FaultKind {
        match code {
            1 => FaultKind::InitCount,
            2 => FaultKind::UpdateRange,
            3 => FaultKind::OverArrival,
            4 => FaultKind::TxRange,
            5 => FaultKind::TxOverflow,
            6 => FaultKind::TxScope,
            7 => FaultKind::TxNotShared,
            8 => FaultKind::DropEmpty,
            9 => FaultKind::WaitTimeout,
            10 => FaultKind::CopyArgs,
            11 => FaultKind::CopyAlign,
            12 => FaultKind::CopyOverlap,
            13 => FaultKind::StaleToken,
            other => FaultKind::Unknown(other),
        }
    }

    /// The `XB_FAULT_*` name, as in `abi.h`.
    pub fn abi_name(self) -> &'static str {
        match self {
            FaultKind::InitCount => "XB_FAULT_INIT_COUNT",
            FaultKind::UpdateRange => "XB_FAULT_UPDATE_RANGE",
            FaultKind::OverArrival => "XB_FAULT_OVER_ARRIVAL",
            FaultKind::TxRange => "XB_FAULT_TX_RANGE",
            FaultKind::TxOverflow => "XB_FAULT_TX_OVERFLOW",
            FaultKind::TxScope => "XB_FAULT_TX_SCOPE",
            FaultKind::TxNotShared => "XB_FAULT_TX_NOT_SHARED",
            FaultKind::DropEmpty => "XB_FAULT_DROP_EMPTY",
            FaultKind::WaitTimeout => "XB_FAULT_WAIT_TIMEOUT",
            FaultKind::CopyArgs => "XB_FAULT_COPY_ARGS",
            FaultKind::CopyAlign => "XB_FAULT_COPY_ALIGN",
            FaultKind::CopyOverlap => "XB_FAULT_COPY_OVERLAP",
            FaultKind::StaleToken => "XB_FAULT_STALE_TOKEN",
            FaultKind::Unknown(_) => "unknown",
        }
    }
}

/// Which barrier call faulted (`XB_OP_*`).
///
/// ```
/// use xbarrier_api::BarrierOp;
/// assert_eq!(BarrierOp::from_code(4), BarrierOp::ArriveTx);
/// assert_eq!(BarrierOp::ArriveTx.api_name(), "barrier_arrive_tx");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BarrierOp {
    /// `init` / the constructor.
    Init,
    /// `arrive`, `arrive_and_wait`.
    Arrive,
    /// `arrive_and_drop`.
    ArriveAndDrop,
    /// `barrier_arrive_tx`.
    ArriveTx,
    /// `barrier_expect_tx`.
    ExpectTx,
    /// A transaction completing (the end of an asynchronous copy).
    CompleteTx,
    /// `wait`, `wait_parity`.
    Wait,
    /// `memcpy_async_tx`.
    MemcpyAsyncTx,
    /// `__syncthreads`.
    Syncthreads,
    /// `memcpy_async`.
    MemcpyAsync,
    /// A code this build does not know.
    Unknown(u32),
}

impl BarrierOp {
    /// From the `XB_OP_*` number.
    pub fn from_code(code: u32) -> BarrierOp {
        match code {
            1 => BarrierOp::Init,
            2 => BarrierOp::Arrive,
            3 => BarrierOp::ArriveAndDrop,
            4 => BarrierOp::ArriveTx,
            5 => BarrierOp::ExpectTx,
            6 => BarrierOp::CompleteTx,
            7 => BarrierOp::Wait,
            8 => BarrierOp::MemcpyAsyncTx,
            9 => BarrierOp::Syncthreads,
            10 => BarrierOp::MemcpyAsync,
            other => BarrierOp::Unknown(other),
        }
    }

    /// The API name a kernel author wrote.
    pub fn api_name(self) -> &'static str {
        match self {
            BarrierOp::Init => "init",
            BarrierOp::Arrive => "arrive",
            BarrierOp::ArriveAndDrop => "arrive_and_drop",
            BarrierOp::ArriveTx => "barrier_arrive_tx",
            BarrierOp::ExpectTx => "barrier_expect_tx",
            BarrierOp::CompleteTx => "complete_tx",
            BarrierOp::Wait => "wait",
            BarrierOp::MemcpyAsyncTx => "memcpy_async_tx",
            BarrierOp::Syncthreads => "__syncthreads",
            BarrierOp::MemcpyAsync => "memcpy_async",
            BarrierOp::Unknown(_) => "unknown op",
        }
    }
}

/// The raw record a kernel writes (`xb_fault_record` in `abi.h`): [`BarrierFault::record`]
/// keeps it with the block, thread, values and barrier state of a fault.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultRecord {
    /// `XB_FAULT_*`.
    pub kind: u32,
    /// `XB_OP_*`.
    pub op: u32,
    /// Block index of the faulting thread.
    pub block: [u32; 3],
    /// Thread index within the block.
    pub thread: [u32; 3],
    /// Address of the barrier.
    pub barrier: u64,
    /// The offending value.
    pub value: i64,
    /// The bound it broke.
    pub limit: i64,
    /// Pending arrivals of the current phase.
    pub pending: i64,
    /// tx-count of the current phase.
    pub tx: i64,
    /// Expected count of later phases.
    pub expected: i64,
    /// Parity of the phase in progress.
    pub phase_parity: u32,
    /// `xb::thread_scope` of the barrier.
    pub scope: u32,
}

impl FaultRecord {
    /// Size of the record in device memory (`sizeof(xb_fault_record)`).
    pub const SIZE: usize = std::mem::size_of::<FaultRecord>();
}

/// Decodes a fault record from its device bytes (native byte order), as a backend copies them
/// out of a module's `xb_fault_record_slot`.
///
/// ```
/// use xbarrier_api::{backend::decode_fault_record, FaultRecord};
/// let mut bytes = [0u8; FaultRecord::SIZE];
/// bytes[0..4].copy_from_slice(&9u32.to_ne_bytes()); // kind: XB_FAULT_WAIT_TIMEOUT
/// bytes[4..8].copy_from_slice(&7u32.to_ne_bytes()); // op: XB_OP_WAIT
/// bytes[20..24].copy_from_slice(&33u32.to_ne_bytes()); // thread.x
/// let record = decode_fault_record(&bytes);
/// assert_eq!((record.kind, record.op, record.thread), (9, 7, [33, 0, 0]));
/// ```
pub fn decode_fault_record(bytes: &[u8; FaultRecord::SIZE]) -> FaultRecord {
    let mut at = 0;
    let mut u32_ = || {
        let v = u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        at += 4;
        v
    };
    let (kind, op) = (u32_(), u32_());
    let block = [u32_(), u32_(), u32_()];
    let thread = [u32_(), u32_(), u32_()];
    let eight = |at: usize| -> [u8; 8] {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        b
    };
    let barrier = u64::from_ne_bytes(eight(32));
    let [value, limit, pending, tx, expected] = [40, 48, 56, 64, 72].map(|at| i64::from_ne_bytes(eight(at)));
    let phase_parity = u32::from_ne_bytes([bytes[80], bytes[81], bytes[82], bytes[83]]);
    let scope = u32::from_ne_bytes([bytes[84], bytes[85], bytes[86], bytes[87]]);
    FaultRecord { kind, op, block, thread, barrier, value, limit, pending, tx, expected, phase_parity, scope }
}

/// A barrier misuse or deadlock inside a kernel, with where it happened and the barrier's state.
/// Backends return it as [`Error::Fault`](crate::Error::Fault); its `Display` is the report a
/// user reads.
///
/// ```
/// use xbarrier_api::{BarrierFault, BarrierOp, FaultKind, FaultRecord};
/// let record = FaultRecord {
///     kind: 3, // XB_FAULT_OVER_ARRIVAL
///     op: 2,   // XB_OP_ARRIVE
///     block: [1, 0, 0],
///     thread: [2, 0, 0],
///     barrier: 0x400,
///     value: 3,
///     limit: 1,
///     pending: 1,
///     expected: 1,
///     scope: 2, // block
///     ..FaultRecord::default()
/// };
/// let fault = BarrierFault::new("my_kernel", record);
/// assert_eq!((fault.kind, fault.op), (FaultKind::OverArrival, BarrierOp::Arrive));
/// assert_eq!(
///     fault.to_string(),
///     "barrier fault in kernel `my_kernel`: arrive on block-scope barrier 0x400, block (1,0,0) \
///      thread (2,0,0): 3 arrival(s) but only 1 still pending in this phase \
///      [phase parity 0, pending 1, tx 0, expected 1]"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierFault {
    /// What went wrong.
    pub kind: FaultKind,
    /// Which call.
    pub op: BarrierOp,
    /// Name of the kernel.
    pub kernel: String,
    /// The raw record, with block, thread, values and state.
    pub record: FaultRecord,
}

impl BarrierFault {
    /// Wraps a record read back from a kernel.
    pub fn new(kernel: &str, record: FaultRecord) -> BarrierFault {
        BarrierFault {
            kind: FaultKind::from_code(record.kind),
            op: BarrierOp::from_code(record.op),
            kernel: kernel.to_owned(),
            record,
        }
    }

    fn scope_name(&self) -> &'static str {
        match self.record.scope {
            0 => "system",
            1 => "device",
            2 => "block",
            3 => "thread",
            _ => "unknown",
        }
    }

    fn what(&self) -> String {
        let r = &self.record;
        match self.kind {
            FaultKind::InitCount => format!("expected count {} is outside 1..={}", r.value, r.limit),
            FaultKind::UpdateRange => format!("arrival update {} is outside 1..={}", r.value, r.limit),
            FaultKind::OverArrival => {
                format!("{} arrival(s) but only {} still pending in this phase", r.value, r.limit)
            }
            FaultKind::TxRange => format!("tx update {} is outside 0..={}", r.value, r.limit),
            FaultKind::TxOverflow => {
                format!("the phase's tx-count would become {} (limit {})", r.value, r.limit)
            }
            FaultKind::TxScope => "tx-count operations need a block-scope barrier".to_owned(),
            FaultKind::TxNotShared => "tx-count operations need a barrier in shared memory".to_owned(),
            FaultKind::DropEmpty => "arrive_and_drop on a barrier that expects no arrivals".to_owned(),
            FaultKind::WaitTimeout => format!(
                "wait made no progress for {:.3} s (bound {:.3} s): deadlock",
                r.value as f64 * 1e-9,
                r.limit as f64 * 1e-9
            ),
            FaultKind::CopyArgs => format!(
                "copy of {} bytes: size <= {}, destination in shared memory, source in global memory",
                r.value,
                (1 << 20) - 1
            ),
            FaultKind::CopyAlign => format!(
                "copy of {} bytes: the size and both addresses must be {}-byte aligned, as its aligned_size_t \
                 promises",
                r.value, r.limit
            ),
            FaultKind::CopyOverlap => format!("copy of {} bytes: source and destination overlap", r.value),
            FaultKind::StaleToken => format!(
                "stale token: it is of phase {}, the barrier is at phase {} or later (a wait takes a token of the \
                 current or the previous phase only)",
                r.value, r.limit
            ),
            FaultKind::Unknown(code) => format!("unknown fault code {code}"),
        }
    }
}

impl BarrierFault {
    /// Whether a host thread made the faulting call (`SystemBarrier`'s host side records
    /// block and thread index `u32::MAX`, which no launch has); `kernel` then names the call.
    pub fn by_host_thread(&self) -> bool {
        self.record.block == [u32::MAX; 3] && self.record.thread == [u32::MAX; 3]
    }
}

impl fmt::Display for BarrierFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.record;
        let state = if r.pending < 0 {
            "barrier not initialized".to_owned()
        } else {
            format!("phase parity {}, pending {}, tx {}, expected {}", r.phase_parity, r.pending, r.tx, r.expected)
        };
        if self.by_host_thread() {
            return write!(
                f,
                "barrier fault in `{}` (a host thread): {} on {}-scope barrier {:#x}: {} [{}]",
                self.kernel,
                self.op.api_name(),
                self.scope_name(),
                r.barrier,
                self.what(),
                state
            );
        }
        write!(
            f,
            "barrier fault in kernel `{}`: {} on {}-scope barrier {:#x}, block ({},{},{}) thread ({},{},{}): {} [{}]",
            self.kernel,
            self.op.api_name(),
            self.scope_name(),
            r.barrier,
            r.block[0],
            r.block[1],
            r.block[2],
            r.thread[0],
            r.thread[1],
            r.thread[2],
            self.what(),
            state
        )
    }
}

impl std::error::Error for BarrierFault {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers here and in `hip-src/include/xbarrier/abi.h` must agree.
    #[test]
    fn codes_match_abi_h() {
        let abi = include_str!("../../hip-src/include/xbarrier/abi.h");
        let define = |name: &str| -> u32 {
            let line = abi
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(name))
                .unwrap_or_else(|| panic!("{name} missing from abi.h"));
            line.split_whitespace().nth(2).and_then(|v| v.parse().ok()).expect("numeric define")
        };
        for code in 1..=13 {
            let kind = FaultKind::from_code(code);
            assert_eq!(define(kind.abi_name()), code, "{kind:?}");
        }
        let ops = [
            ("XB_OP_INIT", BarrierOp::Init),
            ("XB_OP_ARRIVE", BarrierOp::Arrive),
            ("XB_OP_ARRIVE_AND_DROP", BarrierOp::ArriveAndDrop),
            ("XB_OP_ARRIVE_TX", BarrierOp::ArriveTx),
            ("XB_OP_EXPECT_TX", BarrierOp::ExpectTx),
            ("XB_OP_COMPLETE_TX", BarrierOp::CompleteTx),
            ("XB_OP_WAIT", BarrierOp::Wait),
            ("XB_OP_MEMCPY_ASYNC_TX", BarrierOp::MemcpyAsyncTx),
            ("XB_OP_SYNCTHREADS", BarrierOp::Syncthreads),
            ("XB_OP_MEMCPY_ASYNC", BarrierOp::MemcpyAsync),
        ];
        for (name, op) in ops {
            assert_eq!(BarrierOp::from_code(define(name)), op, "{name}");
        }
    }

    #[test]
    fn decodes_device_bytes() {
        let mut bytes = [0u8; FaultRecord::SIZE];
        bytes[0..4].copy_from_slice(&3u32.to_ne_bytes());
        bytes[4..8].copy_from_slice(&2u32.to_ne_bytes());
        bytes[20..24].copy_from_slice(&7u32.to_ne_bytes());
        bytes[32..40].copy_from_slice(&0xabcu64.to_ne_bytes());
        bytes[56..64].copy_from_slice(&(-1i64).to_ne_bytes());
        bytes[84..88].copy_from_slice(&2u32.to_ne_bytes());
        let r = decode_fault_record(&bytes);
        assert_eq!((r.kind, r.op, r.thread, r.barrier, r.pending, r.scope), (3, 2, [7, 0, 0], 0xabc, -1, 2));
        assert_eq!(FaultRecord::SIZE, 88, "must match sizeof(xb_fault_record)");
    }

    #[test]
    fn display_names_everything() {
        let mut r =
            FaultRecord { kind: 3, op: 2, value: 5, limit: 2, pending: 2, expected: 4, scope: 2, ..Default::default() };
        r.thread = [7, 0, 0];
        r.block = [1, 0, 0];
        r.barrier = 0x1000;
        let text = BarrierFault::new("k", r).to_string();
        for needle in [
            "`k`",
            "arrive",
            "block-scope",
            "block (1,0,0)",
            "thread (7,0,0)",
            "5 arrival(s)",
            "only 2 still pending",
            "expected 4",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from {text}");
        }
    }
}
