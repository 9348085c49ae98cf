//! A device-scope barrier across all blocks of a cooperative grid.

use xbarrier::{Backend, LaunchConfig};

use super::{case, Case};
use crate::harness::{check_report, launched, reps, CaseResult, Ctx, Pass};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    vec![case("device_scope_grid_barrier", "device scope", grid::<B>)]
}

fn grid<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let blocks = ctx.device.info().max_cooperative_blocks.clamp(2, 8);
    let threads = 64u32;
    // (mode, rounds): per-block arrival, per-thread arrival, per-thread with drops.
    let (phases, drop_rounds) = (reps(200, 4)?, reps(50, 4)?);
    for (mode, rounds) in [(0u32, phases), (1, phases), (2, drop_rounds)] {
        let barrier = ctx.device.alloc::<u64>(1).map_err(|e| e.to_string())?;
        let data = ctx.device.alloc::<u32>((blocks * threads) as usize).map_err(|e| e.to_string())?;
        let report = ctx.report()?;
        let expected = if mode == 0 { blocks } else { blocks * threads };
        // SAFETY: `xbc_grid_init(xb::barrier<thread_scope_device>* bar, unsigned expected)`;
        // the barrier is 8 bytes, as the buffer.
        let result = unsafe { ctx.launch("xbc_grid_init", LaunchConfig::new(1, 1), &[barrier.arg(), expected.into()]) };
        launched(result, "xbc_grid_init")?;
        let args = [barrier.arg(), data.arg(), report.arg(), rounds.into(), mode.into()];
        // SAFETY: `xbc_grid_barrier(grid_barrier* bar, unsigned* data, unsigned long long* report,
        // unsigned phases, unsigned mode)`; data has one slot per thread of the grid.
        let result = unsafe { ctx.launch("xbc_grid_barrier", LaunchConfig::new(blocks, threads).cooperative(), &args) };
        launched(result, "xbc_grid_barrier")?;
        check_report(&report, &format!("mode {mode}"))?;
    }
    Ok(Pass(format!(
        "{blocks} blocks x {threads} threads, {phases} x2 grid phases per-block and per-thread, {drop_rounds} rounds of per-thread drops"
    )))
}
