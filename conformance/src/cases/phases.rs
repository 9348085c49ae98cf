//! Phases, tokens, parity, arrival updates, drops and completion functions.

use xbarrier::{Backend, KernelArg, LaunchConfig};

use super::{case, Case};
use crate::harness::{check_report, launched, reps, CaseResult, Ctx, Pass};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    vec![
        case("reuse_1000_phases", "phases", reuse::<B>),
        case("split_arrive_wait_tokens", "tokens", split_tokens::<B>),
        case("wait_parity", "tokens", parity::<B>),
        case("arrive_update_gt_1", "arrive(update)", arrive_update::<B>),
        case("arrive_and_drop", "arrive_and_drop", drop::<B>),
        case("completion_once_before_waiters", "completion", completion::<B>),
        case("round_spans_phases", "arrive", plain_spanning::<B>),
        case("completion_round_spans_phases", "completion", spanning::<B>),
        case("completion_token_taken_during_step", "completion", token_in_step::<B>),
        case("completion_drop_counted_in_next_phase", "completion", drop_in_step::<B>),
        case("completion_two_steps_in_one_call", "completion", two_steps::<B>),
        case("completion_lanes_on_two_barriers", "completion", lanes_on_two_barriers::<B>),
    ]
}

/// Runs a `(report*, unsigned count)` kernel over several block sizes.
fn per_block_size<B: Backend>(ctx: &Ctx<B>, kernel: &str, sizes: &[u32], count: u32) -> Result<(), String> {
    per_block_size_args(ctx, kernel, sizes, &[count], kernel)
}

/// Runs a `(report*, unsigned...)` kernel, with `args` after the report, over several block
/// sizes; `label` names the run in a failure.
fn per_block_size_args<B: Backend>(
    ctx: &Ctx<B>,
    kernel: &str,
    sizes: &[u32],
    args: &[u32],
    label: &str,
) -> Result<(), String> {
    for &threads in sizes {
        let report = ctx.report()?;
        let launch_args: Vec<KernelArg> = std::iter::once(report.arg()).chain(args.iter().map(|&a| a.into())).collect();
        // SAFETY: the kernel is `(unsigned long long* report, unsigned...)` with one unsigned per
        // entry of `args`; `report` lives until the launch has been synchronized.
        let result = unsafe { ctx.launch(kernel, LaunchConfig::new(2, threads), &launch_args) };
        launched(result, kernel)?;
        check_report(&report, &format!("{label} with {threads} threads"))?;
    }
    Ok(())
}

fn reuse<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let phases = reps(1000, 4)?;
    per_block_size(ctx, "xbc_reuse", &[1, 33, 256], phases)?;
    per_block_size(ctx, "xbc_reuse", &[1024], phases)?;
    Ok(Pass(format!("{phases} phases x2 barriers per phase, blocks of 1/33/256/1024 threads, 2 blocks")))
}

fn split_tokens<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let phases = reps(300, 4)?;
    per_block_size(ctx, "xbc_split_tokens", &[2, 64, 300], phases)?;
    Ok(Pass(format!("{phases} phases of arrive -> work -> wait / try_wait / wait_parity(token)")))
}

fn parity<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let report = ctx.report()?;
    let seen = ctx.device.alloc::<u64>(8).map_err(|e| e.to_string())?;
    // SAFETY: `xbc_parity(unsigned long long* report, unsigned long long* seen)`.
    launched(unsafe { ctx.launch("xbc_parity", LaunchConfig::new(1, 1), &[report.arg(), seen.arg()]) }, "xbc_parity")?;
    let s = seen.download().map_err(|e| e.to_string())?;
    let want = [1, 0, 1, 0, 1, 0];
    if s[..6] != want {
        return Err(format!("parity observations {:?}, expected {want:?} (fresh: parity 1 complete, 0 not; two-phase-old token aliases)", &s[..6]));
    }
    Ok(Pass(
        "fresh barrier parity(1)=done parity(0)=pending, flips per phase, 2-phase-old token aliases (P4, P6)".into(),
    ))
}

fn arrive_update<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let phases = reps(200, 4)?;
    per_block_size(ctx, "xbc_arrive_update", &[3, 100, 512], phases)?;
    Ok(Pass(format!("updates 1..3, whole or split, expected = sum, {phases} phases")))
}

fn drop<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    for threads in [1u32, 2, 17, 128] {
        let report = ctx.report()?;
        let completed = ctx.device.alloc::<u64>(1).map_err(|e| e.to_string())?;
        // SAFETY: `xbc_drop(unsigned long long* report, unsigned long long* completed)`.
        let result = unsafe { ctx.launch("xbc_drop", LaunchConfig::new(1, threads), &[report.arg(), completed.arg()]) };
        launched(result, "xbc_drop")?;
        check_report(&report, &format!("xbc_drop with {threads} threads"))?;
        let phases = completed.download().map_err(|e| e.to_string())?[0];
        let want = 2 * u64::from(threads) - 1;
        if phases != want {
            return Err(format!("{threads} threads: completion ran {phases} times, expected {want}"));
        }
    }
    Ok(Pass("one thread drops per round until none is left; counts fall, no early completion".into()))
}

fn completion<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let phases = reps(500, 4)?;
    per_block_size(ctx, "xbc_completion", &[1, 64, 1024], phases)?;
    Ok(Pass(format!("{phases} x2 phases: the completion ran once per phase, before every waiter returned")))
}

fn spanning<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    // Half of 64, 192 or 1024 threads is a multiple of 32 but not always of 64: AMD's
    // 64-wide waves straddle phases. An NVIDIA warp must not: CUDA combines a warp's
    // arrivals into one (the seed's coalesced-arrival rule), and an mbarrier arrival beyond
    // the pending count traps (docs/mbarrier-semantics.md, P5).
    let rounds = reps(300, 4)?;
    per_block_size(ctx, "xbc_completion_spanning", &[64, 192, 1024], rounds)?;
    Ok(Pass(format!("{rounds} rounds of 2 phases per block: one warp's arrivals complete a phase and open the next")))
}

fn plain_spanning<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    // As `spanning`, without a completion function: the direct layouts' first arrival arms
    // its phase with a second RMW, and the next phase's arrivals may land before it. Half
    // the block is a multiple of 64, so that no AMD wave straddles two phases either (a lane
    // group counted across a phase's end over-arrives, protocol.hpp 6.).
    let rounds = reps(300, 4)?;
    per_block_size(ctx, "xbc_spanning", &[128, 256, 1024], rounds)?;
    Ok(Pass(format!("{rounds} rounds of 2 phases per block, no completion function: both phases complete")))
}

fn token_in_step<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let rounds = reps(50, 4)?;
    per_block_size(ctx, "xbc_completion_token_in_step", &[128, 256, 1024], rounds)?;
    Ok(Pass(format!("{rounds} rounds: half the block arrives during a step and waits; both steps done on return")))
}

fn drop_in_step<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    per_block_size(ctx, "xbc_completion_drop_in_step", &[128, 256, 1024], 8)?;
    Ok(Pass("8 barriers: half drops in phase 0, half during step 0; exactly 2 steps each".into()))
}

fn two_steps<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let rounds = reps(50, 4)?;
    per_block_size(ctx, "xbc_completion_two_steps_in_one_call", &[128], rounds)?;
    Ok(Pass(format!("{rounds} rounds: an arrive_and_wait whose step's end completes the next phase returns")))
}

fn lanes_on_two_barriers<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    const KERNEL: &str = "xbc_completion_lanes_on_two_barriers";
    let rounds = reps(200, 4)?;
    for (wait, form) in [(0u32, "arrive"), (1, "arrive_and_wait")] {
        per_block_size_args(ctx, KERNEL, &[64, 256, 1024], &[rounds, wait], &format!("{KERNEL} ({form})"))?;
    }
    Ok(Pass(format!(
        "{rounds} rounds: even and odd lanes arrive (or arrive and wait) on two barriers at once; each step runs before its last arrival returns"
    )))
}
