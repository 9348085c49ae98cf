//! Host threads and kernel threads on one barrier of system scope ([`SystemBarrier`]): phases
//! with data both ways, `arrive_and_drop` from either side, a host timeout, and (misuse) a
//! kernel that faults while host threads wait. Each in both forms: the shared one
//! (`host_threads_*`) and the split one (`host_threads_split_*`). Named `host_threads_*`, so
//! that `xbar check --filter host_threads` selects them.

use std::time::{Duration, Instant};

use xbarrier::{
    Backend, BarrierOp, Error, FaultKind, Launch, LaunchArg, LaunchConfig, PeerPlacement, SystemBarrier, SystemBuffer,
};

use super::{case, Case, Suite};
use crate::harness::{check_report, reps, CaseResult, Ctx, Pass, LAUNCH_LIMIT};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    use Form::{Shared, Split};
    let misuse = |name, run| Case {
        name,
        feature: "misuse",
        suite: Suite::Misuse,
        devices: 1,
        placement: PeerPlacement::DeviceMemory,
        run,
    };
    vec![
        case("host_threads_exchange", "host threads", |c| exchange(c, Shared, Leaving::Nobody)),
        case("host_threads_host_drops", "host threads", |c| exchange(c, Shared, Leaving::LastHostThread)),
        case("host_threads_kernel_drops", "host threads", |c| exchange(c, Shared, Leaving::LastBlock)),
        case("host_threads_host_side_leaves", "host threads", |c| exchange(c, Shared, Leaving::EveryHostThread)),
        case("host_threads_try_wait_for_timeout", "host threads", |c| timeout(c, Shared)),
        case("host_threads_split_exchange", "host threads", |c| exchange(c, Split, Leaving::Nobody)),
        case("host_threads_split_host_drops", "host threads", |c| exchange(c, Split, Leaving::LastHostThread)),
        case("host_threads_split_kernel_drops", "host threads", |c| exchange(c, Split, Leaving::LastBlock)),
        case("host_threads_split_host_side_leaves", "host threads", |c| exchange(c, Split, Leaving::EveryHostThread)),
        case("host_threads_split_try_wait_for_timeout", "host threads", |c| timeout(c, Split)),
        misuse("host_threads_kernel_fault_ends_host_waits", |c| fault(c, Shared)),
        misuse("host_threads_host_over_arrival", |c| host_misuse(c, Shared)),
        misuse("host_threads_split_kernel_fault_ends_host_waits", |c| fault(c, Split)),
        misuse("host_threads_split_host_over_arrival", |c| host_misuse(c, Split)),
    ]
}

/// The barrier's form: [`SystemBarrier::new`] or [`SystemBarrier::split`].
#[derive(Clone, Copy, PartialEq)]
enum Form {
    Shared,
    Split,
}

/// A barrier for `host` host threads and `kernel` kernel threads, in `form`.
fn barrier<B: Backend>(ctx: &Ctx<B>, form: Form, host: u32, kernel: u32) -> Result<SystemBarrier<B>, String> {
    let made = match form {
        Form::Shared => SystemBarrier::new(&ctx.device, u64::from(host + kernel)),
        Form::Split => SystemBarrier::split(&ctx.device, u64::from(host), u64::from(kernel)),
    };
    made.map_err(err)
}

/// Who leaves halfway with `arrive_and_drop` (the kernel's `drop_side`).
#[derive(Clone, Copy, PartialEq)]
enum Leaving {
    Nobody = 0,
    LastHostThread = 1,
    LastBlock = 2,
    EveryHostThread = 3,
}

const BLOCKS: u32 = 2;
const THREADS: u32 = 32;
const HOST_THREADS: u32 = 2;

/// What participant `slot` writes in phase `p` (xbc::exchange_value in host_threads.cpp).
fn exchange_value(p: u32, slot: u32) -> u32 {
    p.wrapping_mul(2654435761) ^ slot.wrapping_mul(40503).wrapping_add(1)
}

fn err(e: Error) -> String {
    e.to_string()
}

/// Phases with data both ways; `leaving` leave halfway, and the others go on without them.
fn exchange<B: Backend>(ctx: &Ctx<B>, form: Form, leaving: Leaving) -> CaseResult {
    let phases = reps(10_000, 100)?;
    let drop_at = phases / 2;
    let drop_side = leaving as u32;
    let kernel_threads = BLOCKS * THREADS;
    let total = kernel_threads + HOST_THREADS;
    let barrier = barrier(ctx, form, HOST_THREADS, kernel_threads)?;
    let data: SystemBuffer<B, u32> = ctx.device.alloc_system((2 * total) as usize).map_err(err)?;
    let report = ctx.report()?;
    let kernel = ctx.module.kernel("xbc_host_threads_exchange").map_err(err)?;
    let config = LaunchConfig::new(BLOCKS, THREADS).cooperative().timeout(LAUNCH_LIMIT);
    // A wrong value is kept and the phases go on: a host thread that stopped arriving would
    // leave the kernel waiting for it forever (a GPU kernel cannot be aborted).
    let host_thread = |h: u32| -> Result<(), String> {
        let slot = kernel_threads + h;
        let leaves = match leaving {
            Leaving::LastHostThread => h == HOST_THREADS - 1,
            Leaving::EveryHostThread => true,
            Leaving::Nobody | Leaving::LastBlock => false,
        };
        let mut wrong = None;
        for p in 0..phases {
            if leaves && p == drop_at {
                barrier.arrive_and_drop().map_err(err)?;
                break;
            }
            data.store(((p % 2) * total + slot) as usize, exchange_value(p, slot)).map_err(err)?;
            barrier.arrive_and_wait().map_err(err)?;
            let present = kernel_threads - if leaving == Leaving::LastBlock && p >= drop_at { THREADS } else { 0 };
            let other = (h * 7 + p) % present;
            let got = data.load(((p % 2) * total + other) as usize).map_err(err)?;
            if got != exchange_value(p, other) && wrong.is_none() {
                wrong = Some(format!(
                    "host thread {h}, phase {p}: kernel thread {other} wrote {got:#x}, expected {:#x}",
                    exchange_value(p, other)
                ));
            }
        }
        wrong.map_or(Ok(()), Err)
    };
    std::thread::scope(|s| -> Result<(), String> {
        let hosts: Vec<_> = (0..HOST_THREADS).map(|h| s.spawn(move || host_thread(h))).collect();
        let args = [
            barrier.arg(),
            LaunchArg::system(&data),
            LaunchArg::buffer(&report),
            phases.into(),
            HOST_THREADS.into(),
            drop_side.into(),
            drop_at.into(),
        ];
        // SAFETY: xbc_host_threads_exchange(system_barrier* bar, unsigned* data, unsigned long
        // long* report, unsigned phases, unsigned host_threads, unsigned drop_side, unsigned
        // drop_at); `data` holds 2 * (kernel threads + host threads) slots.
        let launched = unsafe { Launch::start(&ctx.stream, &kernel, &config, &args) }.and_then(|l| l.wait());
        let hosts: Vec<Result<(), String>> =
            hosts.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a host thread panicked".into()))).collect();
        launched.map_err(|e| format!("xbc_host_threads_exchange: {e}"))?;
        hosts.into_iter().collect::<Result<Vec<()>, String>>().map(drop)
    })?;
    check_report(&report, "kernel threads reading host threads' data")?;
    let dropped = [
        "",
        ", the last host thread leaving halfway",
        ", the last block leaving halfway",
        ", every host thread leaving halfway",
    ][drop_side as usize];
    let form = if form == Form::Split { " (split)" } else { "" };
    Ok(Pass(format!(
        "{BLOCKS} blocks x {THREADS} threads + {HOST_THREADS} host threads{form}, {phases} phases{dropped}"
    )))
}

/// A host thread's try_wait_for on a phase a kernel has yet to arrive in times out, and
/// the wait on the same token completes once the kernel arrives.
fn timeout<B: Backend>(ctx: &Ctx<B>, form: Form) -> CaseResult {
    let barrier = barrier(ctx, form, 1, 1)?;
    let token = barrier.arrive(1).map_err(err)?;
    let limit = Duration::from_millis(20);
    let start = Instant::now();
    if barrier.try_wait_for(&token, limit).map_err(err)? {
        return Err("try_wait_for saw a phase complete that lacked the kernel's arrival".into());
    }
    let waited = start.elapsed();
    if waited < limit {
        return Err(format!("try_wait_for returned false after {waited:?}, before its timeout of {limit:?}"));
    }
    let kernel = ctx.module.kernel("xbc_host_threads_arrive").map_err(err)?;
    let config = LaunchConfig::new(1, 32).timeout(LAUNCH_LIMIT);
    std::thread::scope(|s| -> Result<(), String> {
        let host = s.spawn(|| barrier.wait(token));
        // SAFETY: xbc_host_threads_arrive(system_barrier* bar, unsigned arrivals).
        let launched = unsafe { Launch::start(&ctx.stream, &kernel, &config, &[barrier.arg(), 1u32.into()]) }
            .and_then(|l| l.wait());
        let host = host.join().map_err(|_| "the host thread panicked".to_owned())?;
        launched.map_err(|e| format!("xbc_host_threads_arrive: {e}"))?;
        host.map_err(|e| format!("the wait after the kernel's arrival: {e}"))
    })?;
    Ok(Pass(format!("timed out after {waited:?} (limit {limit:?}); completed by the kernel's arrival")))
}

/// A kernel thread over-arrives (a fault in checked builds) while two host threads wait for
/// the phase: the launch reports the fault, and each host wait ends with BarrierAbandoned.
fn fault<B: Backend>(ctx: &Ctx<B>, form: Form) -> CaseResult {
    let threads = 32u32;
    let barrier = barrier(ctx, form, HOST_THREADS, threads)?;
    let kernel = ctx.module.kernel("xbc_host_threads_over_arrive").map_err(err)?;
    let config = LaunchConfig::new(1, threads).timeout(LAUNCH_LIMIT);
    let start = Instant::now();
    let (launched, hosts) = std::thread::scope(|s| {
        // The second host thread arrives late, after the kernel's fault: in the shared form
        // the fault may have left a completion step claimed that nobody will publish, and an
        // arrival that finds it waits inside the protocol, which must give up too. (In the
        // split form the host's share is its own: the late arrival returns, its wait gives up.)
        let barrier = &barrier;
        let hosts: Vec<_> = (0..HOST_THREADS)
            .map(|h| {
                s.spawn(move || {
                    if h == 1 {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    barrier.arrive_and_wait()
                })
            })
            .collect();
        let extra = threads + HOST_THREADS + 1;
        // SAFETY: xbc_host_threads_over_arrive(system_barrier* bar, unsigned extra).
        let launched = unsafe { Launch::start(&ctx.stream, &kernel, &config, &[barrier.arg(), extra.into()]) }
            .and_then(|l| l.wait());
        // None: the host thread panicked.
        let hosts: Vec<Option<xbarrier::Result<()>>> = hosts.into_iter().map(|h| h.join().ok()).collect();
        (launched, hosts)
    });
    match launched {
        Err(Error::Fault(f)) if f.kind == FaultKind::OverArrival && f.op == BarrierOp::Arrive => {}
        other => return Err(format!("expected an OverArrival fault from the launch, got {other:?}")),
    }
    for (h, result) in hosts.iter().enumerate() {
        match result {
            // The late arrival may end inside the arrive, waiting for a publish.
            Some(Err(Error::BarrierAbandoned { call: "SystemBarrier::wait" | "SystemBarrier::arrive", cause }))
                if cause.contains("xbc_host_threads_over_arrive") => {}
            other => return Err(format!("host thread {h}: expected BarrierAbandoned naming the fault, got {other:?}")),
        }
    }
    Ok(Pass(format!("the fault ended {HOST_THREADS} host waits within {:?}", start.elapsed())))
}

/// A host thread's own misuse in checked builds: an arrival above what the phase expects (in
/// the split form, the host's share of it: the kernels' share is left) is a fault naming the
/// host call.
fn host_misuse<B: Backend>(ctx: &Ctx<B>, form: Form) -> CaseResult {
    let barrier = barrier(ctx, form, 2, if form == Form::Split { 4 } else { 0 })?;
    match barrier.arrive(3) {
        Err(Error::Fault(f)) if f.kind == FaultKind::OverArrival && f.op == BarrierOp::Arrive && f.by_host_thread() => {
            Ok(Pass(f.to_string()))
        }
        Err(other) => Err(format!("expected an OverArrival fault naming SystemBarrier::arrive, got {other}")),
        Ok(_) => Err("an arrival of 3 on a barrier expecting 2 went unreported".into()),
    }
}
