//! Misuse that checked builds report as a typed fault naming the op, block and thread. (A tx
//! operation on a barrier of another scope than the block's is no such misuse: it does not
//! compile.)

use xbarrier::{Backend, BarrierOp, Error, FaultKind, KernelArg, LaunchConfig, PeerPlacement};

use super::{Case, Suite};
use crate::harness::{CaseResult, Ctx, Pass};

fn misuse<B: Backend>(name: &'static str, run: fn(&Ctx<B>) -> CaseResult) -> Case<B> {
    Case { name, feature: "misuse", suite: Suite::Misuse, devices: 1, placement: PeerPlacement::DeviceMemory, run }
}

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    vec![
        misuse("init_with_zero", |c| expect_fault(c, "xbm_init_zero", &[], FaultKind::InitCount, BarrierOp::Init)),
        misuse("init_above_max", |c| expect_fault(c, "xbm_init_too_many", &[], FaultKind::InitCount, BarrierOp::Init)),
        misuse("init_completion_barrier_above_max", |c| {
            expect_fault(c, "xbm_init_completion_too_many", &[], FaultKind::InitCount, BarrierOp::Init)
        }),
        misuse("arrive_update_zero", |c| {
            expect_fault(c, "xbm_arrive_zero", &[], FaultKind::UpdateRange, BarrierOp::Arrive)
        }),
        misuse("arrive_update_above_pending", |c| {
            expect_fault(c, "xbm_over_arrival", &[], FaultKind::OverArrival, BarrierOp::Arrive)
        }),
        misuse("arrive_while_only_tx_pending", |c| {
            expect_fault(c, "xbm_arrive_while_tx_pending", &[], FaultKind::OverArrival, BarrierOp::Arrive)
        }),
        misuse("arrive_tx_above_2p20", |c| {
            expect_fault(c, "xbm_arrive_tx_too_large", &[], FaultKind::TxRange, BarrierOp::ArriveTx)
        }),
        misuse("expect_tx_above_2p20", |c| {
            expect_fault(c, "xbm_expect_tx_too_large", &[], FaultKind::TxRange, BarrierOp::ExpectTx)
        }),
        misuse("tx_count_overflow", |c| {
            expect_fault(c, "xbm_tx_count_overflow", &[], FaultKind::TxOverflow, BarrierOp::ExpectTx)
        }),
        misuse("tx_count_underflow", |c| {
            expect_fault(c, "xbm_tx_count_underflow", &[], FaultKind::TxOverflow, BarrierOp::CompleteTx)
        }),
        misuse("tx_on_barrier_in_global_memory", tx_on_global::<B>),
        misuse("memcpy_async_tx_misaligned", copy_misaligned::<B>),
        misuse("memcpy_async_tx_breaks_its_alignment_promise", |c| {
            let src = c.device.alloc::<u32>(32).map_err(|e| e.to_string())?;
            expect_fault(c, "xbm_copy_breaks_promise", &[src.arg()], FaultKind::CopyAlign, BarrierOp::MemcpyAsyncTx)
        }),
        misuse("memcpy_async_tx_from_shared_memory", |c| {
            expect_fault(c, "xbm_copy_from_shared", &[], FaultKind::CopyArgs, BarrierOp::MemcpyAsyncTx)
        }),
        misuse("memcpy_async_breaks_its_alignment_promise", |c| {
            let src = c.device.alloc::<u32>(16).map_err(|e| e.to_string())?;
            expect_fault(
                c,
                "xbm_memcpy_async_breaks_promise",
                &[src.arg()],
                FaultKind::CopyAlign,
                BarrierOp::MemcpyAsync,
            )
        }),
        misuse("memcpy_async_overlapping", |c| {
            expect_fault(c, "xbm_memcpy_async_overlap", &[], FaultKind::CopyOverlap, BarrierOp::MemcpyAsync)
        }),
        misuse("drop_when_nobody_expected", |c| {
            expect_fault(c, "xbm_drop_when_empty", &[], FaultKind::DropEmpty, BarrierOp::ArriveAndDrop)
        }),
        misuse("stale_token_wait", |c| expect_stale(c, "xbm_stale_token_wait", 2)),
        misuse("stale_token_try_wait", |c| expect_stale(c, "xbm_stale_token_try_wait", 2)),
        misuse("stale_token_try_wait_for", |c| expect_stale(c, "xbm_stale_token_try_wait_for", 3)),
        misuse("deadlock_is_reported", deadlock::<B>),
    ]
}

const CULPRIT_BLOCK: u32 = 1;
const CULPRIT_THREAD: u32 = 2;

/// Launches `kernel(extra..., fb, ft)` on 2 blocks of 4 threads and requires exactly the
/// fault `kind` in `op`, attributed to block 1 thread 2.
fn expect_fault<B: Backend>(
    ctx: &Ctx<B>,
    kernel: &str,
    extra: &[KernelArg],
    kind: FaultKind,
    op: BarrierOp,
) -> CaseResult {
    let mut args = extra.to_vec();
    args.extend([KernelArg::U32(CULPRIT_BLOCK), KernelArg::U32(CULPRIT_THREAD)]);
    // SAFETY: every misuse kernel takes its extra arguments (supplied by the caller to match)
    // followed by `unsigned fb, unsigned ft`.
    let result = unsafe { ctx.launch(kernel, LaunchConfig::new(2, 4), &args) };
    let fault = match result {
        Err(Error::Fault(fault)) => fault,
        Err(other) => return Err(format!("{kernel}: expected a {kind:?} fault, got another error: {other}")),
        Ok(()) => return Err(format!("{kernel}: the misuse went unreported (expected a {kind:?} fault)")),
    };
    if fault.kind != kind || fault.op != op {
        return Err(format!("{kernel}: expected {kind:?} in {op:?}, got {fault}"));
    }
    if fault.record.block != [CULPRIT_BLOCK, 0, 0] || fault.record.thread != [CULPRIT_THREAD, 0, 0] {
        return Err(format!("{kernel}: fault attributed to the wrong thread: {fault}"));
    }
    Ok(Pass(fault.to_string()))
}

/// A wait on a token of phase 0 while the barrier is at phase `at`.
fn expect_stale<B: Backend>(ctx: &Ctx<B>, kernel: &str, at: i64) -> CaseResult {
    let pass = expect_fault(ctx, kernel, &[], FaultKind::StaleToken, BarrierOp::Wait)?;
    let wanted = format!("it is of phase 0, the barrier is at phase {at} or later");
    if !pass.0.contains(&wanted) {
        return Err(format!("{kernel}: the report should say \"{wanted}\": {}", pass.0));
    }
    Ok(pass)
}

fn tx_on_global<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let barrier = ctx.device.alloc::<u64>(1).map_err(|e| e.to_string())?;
    expect_fault(ctx, "xbm_tx_on_global_memory", &[barrier.arg()], FaultKind::TxNotShared, BarrierOp::ExpectTx)
}

fn copy_misaligned<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let src = ctx.device.alloc::<u32>(16).map_err(|e| e.to_string())?;
    expect_fault(ctx, "xbm_copy_misaligned", &[src.arg()], FaultKind::CopyAlign, BarrierOp::MemcpyAsyncTx)
}

fn deadlock<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let config = LaunchConfig::new(2, 8).timeout(std::time::Duration::from_millis(1500));
    // SAFETY: `xbm_deadlock()` takes no arguments.
    let fault = match unsafe { ctx.launch("xbm_deadlock", config, &[]) } {
        Err(Error::Fault(fault)) => fault,
        Err(other) => return Err(format!("expected a WaitTimeout fault, got {other}")),
        Ok(()) => return Err("a kernel that cannot finish reported success".into()),
    };
    if fault.kind != FaultKind::WaitTimeout || fault.op != BarrierOp::Wait {
        return Err(format!("expected WaitTimeout in wait, got {fault}"));
    }
    if fault.record.pending != 1 || fault.record.expected != 9 {
        return Err(format!("diagnostics should show 1 of 9 arrivals pending: {fault}"));
    }
    Ok(Pass(fault.to_string()))
}
