//! Kernels on several devices at one barrier of system scope ([`PeerBarrier`]), with data
//! handed from device to device through memory they share ([`PeerBuffer`]): phases with
//! every way to wait, `arrive_and_drop` by one device's block, and a timed wait that must
//! time out, in device memory reached over a peer path and in memory the system shares. The
//! `multi_gpu_*` cases need two devices (the host backend offers two stand-ins; a machine
//! with one GPU, or whose GPUs cannot share memory so, reports them ignored); the
//! `peer_one_device_*` ones run the same kernels on two streams of one device.

use std::time::Duration;

use xbarrier::{
    Backend, Buffer, Device, Kernel, Launch, LaunchArg, LaunchConfig, Module, PeerBarrier, PeerBuffer, PeerPlacement,
    Stream,
};

use super::{Case, Suite};
use crate::harness::{check_report, reps, CaseResult, Ctx, Pass, LAUNCH_LIMIT};

use PeerPlacement::{DeviceMemory, SystemMemory};

pub fn cases<B: Backend>() -> Vec<Case<B>> {
    let case = |name, devices, placement, run| Case {
        name,
        feature: "multi-gpu",
        suite: Suite::Conformance,
        devices,
        placement,
        run,
    };
    vec![
        case("multi_gpu_exchange", 2, DeviceMemory, |c| exchange(c, Sides::TwoDevices, DeviceMemory, None)),
        case("multi_gpu_block_drops", 2, DeviceMemory, |c| exchange(c, Sides::TwoDevices, DeviceMemory, Some(1))),
        case("multi_gpu_try_wait_for_timeout", 2, DeviceMemory, |c| timeout(c, Sides::TwoDevices, DeviceMemory)),
        case("multi_gpu_launch_on_unreached_device", 2, DeviceMemory, unreached),
        case("multi_gpu_system_memory_block_drops", 2, SystemMemory, |c| {
            exchange(c, Sides::TwoDevices, SystemMemory, Some(1))
        }),
        case("multi_gpu_system_memory_try_wait_for_timeout", 2, SystemMemory, |c| {
            timeout(c, Sides::TwoDevices, SystemMemory)
        }),
        case("peer_one_device_exchange", 1, DeviceMemory, |c| exchange(c, Sides::OneDevice, DeviceMemory, Some(0))),
        case("peer_one_device_try_wait_for_timeout", 1, DeviceMemory, |c| timeout(c, Sides::OneDevice, DeviceMemory)),
        case("peer_one_device_system_memory_block_drops", 1, SystemMemory, |c| {
            exchange(c, Sides::OneDevice, SystemMemory, Some(0))
        }),
    ]
}

/// Where the two sides run: devices 0 and 1, or two streams of device 0 (the same kernels;
/// no peer path, but everything else of the multi-device form).
#[derive(Clone, Copy, PartialEq)]
enum Sides {
    TwoDevices,
    OneDevice,
}

/// One side: a device, the conformance module loaded there, a stream.
struct Side<B: Backend> {
    device: Device<B>,
    module: Module<B>,
    stream: Stream<B>,
}

fn err(e: xbarrier::Error) -> String {
    e.to_string()
}

/// The two sides, the first on the context's device, in its variant.
fn sides<B: Backend>(ctx: &Ctx<B>, sides: Sides) -> Result<[Side<B>; 2], String> {
    let ordinal = if sides == Sides::TwoDevices { 1 } else { 0 };
    let device = Device::<B>::open(ordinal).map_err(err)?;
    let bundle = crate::bundle().map_err(err)?;
    let module = device.load_variant(&bundle, ctx.module.variant()).map_err(err)?;
    let first = Side {
        device: ctx.device.clone(),
        module: ctx.device.load_variant(&bundle, ctx.module.variant()).map_err(err)?,
        stream: ctx.device.stream().map_err(err)?,
    };
    let stream = device.stream().map_err(err)?;
    Ok([first, Side { device, module, stream }])
}

/// Kernel `name` of each side's module, looked up before either side launches: CUDA may
/// load a kernel at its lookup, which can wait for the kernels running on the device, and
/// the other side's kernel would be waiting for this one.
fn kernels<B: Backend>(sides: &[Side<B>; 2], name: &str) -> Result<[Kernel<B>; 2], String> {
    Ok([sides[0].module.kernel(name).map_err(err)?, sides[1].module.kernel(name).map_err(err)?])
}

/// Runs side 1 on a thread of its own and side 0 on this one: the host backend's launches
/// return at their end, and each side's kernel waits for the other's.
fn on_both_sides(run_side: impl Fn(usize) -> Result<(), String> + Sync) -> Result<(), String> {
    std::thread::scope(|s| {
        let second = s.spawn(|| run_side(1));
        let first = run_side(0);
        let second = second.join().unwrap_or_else(|_| Err("the second side's thread panicked".into()));
        first.and(second)
    })
}

const BLOCKS: u32 = 2;
const THREADS: u32 = 64;

/// Every thread of a grid on each side meets the others for many phases; each side writes
/// into the other side's memory and reads what the other side wrote there. `drop_side`:
/// that side's last block leaves halfway, and the phases go on without it.
fn exchange<B: Backend>(ctx: &Ctx<B>, where_: Sides, placement: PeerPlacement, drop_side: Option<u32>) -> CaseResult {
    // In system memory, the arrivals of two GPUs move the barrier's page back and forth.
    let phases =
        if where_ == Sides::TwoDevices && placement == SystemMemory { reps(200, 10)? } else { reps(3_000, 60)? };
    let drop_at = phases / 2;
    let sides = sides(ctx, where_)?;
    let k = BLOCKS * THREADS;
    let devices: Vec<&Device<B>> = sides.iter().map(|s| &s.device).collect();
    let barrier = PeerBarrier::new_in(placement, &devices, u64::from(2 * k)).map_err(err)?;
    // inbox[s]: side s's memory, which side 1 - s writes and side s reads.
    let inbox: Vec<PeerBuffer<B, u32>> = (0..2)
        .map(|s| sides[s].device.alloc_peer_in::<u32>(placement, (2 * k) as usize, &[&sides[1 - s].device]))
        .collect::<Result<_, _>>()
        .map_err(err)?;
    placed(&barrier, placement)?;
    let reports: Vec<Buffer<B, u64>> =
        sides.iter().map(|s| s.device.alloc::<u64>(8)).collect::<Result<_, _>>().map_err(err)?;
    let config = LaunchConfig::new(BLOCKS, THREADS).timeout(LAUNCH_LIMIT);
    let config = if where_ == Sides::TwoDevices { config.cooperative() } else { config };
    let drop_side = drop_side.unwrap_or(2);
    let kernels = kernels(&sides, "xbc_multi_gpu_exchange")?;
    let run_side = |s: usize| -> Result<(), String> {
        let kernel = &kernels[s];
        let args = [
            barrier.arg(),
            LaunchArg::peer(&inbox[1 - s]),
            LaunchArg::peer(&inbox[s]),
            LaunchArg::buffer(&reports[s]),
            phases.into(),
            (s as u32).into(),
            2u32.into(),
            drop_side.into(),
            drop_at.into(),
        ];
        // SAFETY: xbc_multi_gpu_exchange(system_barrier* bar, unsigned* out, const unsigned*
        // in, unsigned long long* report, unsigned phases, unsigned side, unsigned sides,
        // unsigned drop_side, unsigned drop_at); `out` and `in` hold 2 * K slots, K being
        // the grid's threads, and `report` 8 words.
        unsafe { Launch::start(&sides[s].stream, kernel, &config, &args) }
            .and_then(|l| l.wait())
            .map_err(|e| format!("side {s}: xbc_multi_gpu_exchange: {e}"))
    };
    on_both_sides(run_side)?;
    for (s, report) in reports.iter().enumerate() {
        check_report(report, &format!("side {s} reading side {}'s data", 1 - s))?;
    }
    let place = match where_ {
        Sides::TwoDevices => "devices 0 and 1",
        Sides::OneDevice => "two streams of device 0",
    };
    let dropped =
        if drop_side < 2 { format!(", side {drop_side}'s last block leaving halfway") } else { String::new() };
    Ok(Pass(format!(
        "{BLOCKS} blocks x {THREADS} threads on each of {place}, {phases} phases{dropped}, in {}",
        placement.name()
    )))
}

/// A timed wait on a phase whose other arrival is held back times out, and the phase
/// completes once that arrival comes (xbc_multi_gpu_timeout).
fn timeout<B: Backend>(ctx: &Ctx<B>, where_: Sides, placement: PeerPlacement) -> CaseResult {
    let sides = sides(ctx, where_)?;
    let devices: Vec<&Device<B>> = sides.iter().map(|s| &s.device).collect();
    let barrier = PeerBarrier::new_in(placement, &devices, 2).map_err(err)?;
    let flag = sides[1].device.alloc_peer_in::<u64>(placement, 1, &[&sides[0].device]).map_err(err)?;
    placed(&barrier, placement)?;
    let reports: Vec<Buffer<B, u64>> =
        sides.iter().map(|s| s.device.alloc::<u64>(8)).collect::<Result<_, _>>().map_err(err)?;
    let limit = Duration::from_millis(20);
    let config = LaunchConfig::new(1, 32).timeout(LAUNCH_LIMIT);
    let kernels = kernels(&sides, "xbc_multi_gpu_timeout")?;
    let run_side = |s: usize| -> Result<(), String> {
        let kernel = &kernels[s];
        let args = [
            barrier.arg(),
            LaunchArg::peer(&flag),
            LaunchArg::buffer(&reports[s]),
            (s as u32).into(),
            (limit.as_nanos() as u64).into(),
        ];
        // SAFETY: xbc_multi_gpu_timeout(system_barrier* bar, uint64_t* flag, unsigned long
        // long* report, unsigned side, unsigned long long timeout_ns); `report` holds 8 words.
        unsafe { Launch::start(&sides[s].stream, kernel, &config, &args) }
            .and_then(|l| l.wait())
            .map_err(|e| format!("side {s}: xbc_multi_gpu_timeout: {e}"))
    };
    on_both_sides(run_side)?;
    let report = check_report(&reports[0], "side 0's try_wait_for on a phase side 1 had not arrived in")?;
    let waited = Duration::from_nanos(report[4]);
    if waited < limit {
        return Err(format!("try_wait_for returned false after {waited:?}, before its timeout of {limit:?}"));
    }
    Ok(Pass(format!(
        "timed out after {waited:?} (limit {limit:?}) across the two sides, in {}; completed by the held-back arrival",
        placement.name()
    )))
}

/// The barrier lies where it was asked to.
fn placed<B: Backend>(barrier: &PeerBarrier<B>, placement: PeerPlacement) -> Result<(), String> {
    match barrier.placement() {
        found if found == placement => Ok(()),
        found => Err(format!("PeerBarrier::new_in({placement:?}) placed the barrier in {found:?}")),
    }
}

/// A barrier made for device 0 alone is refused on device 1's stream before anything runs.
fn unreached<B: Backend>(ctx: &Ctx<B>) -> CaseResult {
    let [_, other] = sides(ctx, Sides::TwoDevices)?;
    let barrier = PeerBarrier::new(&[&ctx.device], 1).map_err(err)?;
    let kernel = other.module.kernel("xbc_multi_gpu_timeout").map_err(err)?;
    let flag = ctx.device.alloc_peer::<u64>(1, &[]).map_err(err)?;
    let report = other.device.alloc::<u64>(8).map_err(err)?;
    let args = [barrier.arg(), LaunchArg::peer(&flag), LaunchArg::buffer(&report), 1u32.into(), 0u64.into()];
    // SAFETY: as in `timeout`; the launch is refused before the kernel runs.
    let result = match unsafe { Launch::start(&other.stream, &kernel, &LaunchConfig::new(1, 32), &args) } {
        Err(xbarrier::Error::DeviceMismatch { what, found: 0, stream: 1, .. }) if what == "argument 1 (a buffer)" => {
            Ok(Pass("a barrier of device 0 alone refused on device 1: DeviceMismatch".into()))
        }
        Err(e) => Err(format!("expected a device mismatch for argument 1, got {e}")),
        Ok(launch) => {
            let _ = launch.wait();
            Err("a barrier that device 1 does not reach was launched there".into())
        }
    };
    result
}
