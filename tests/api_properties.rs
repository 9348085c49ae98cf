//! Property tests of the Rust API on the host backend: whatever launch configuration, buffer
//! size or element range a caller passes, the API either does the work or returns a typed
//! [`Error`]. It never panics and never hangs: every launch carries a `LaunchConfig::timeout`,
//! and runs on a helper thread that the test gives up on after `HANG_LIMIT`.
//!
//! The kernels are the conformance bundle's (`xbarrier_conformance::bundle()`):
//! `xbc_round_trip(unsigned phases)` (every thread of a block, `phases` x `arrive_and_wait`,
//! any block shape) and `xbc_copy_tx(src, report, bytes, pieces, rounds)` (`memcpy_async_tx`
//! into dynamic shared memory, checked word by word against global memory).
//!
//! Cases per property are fixed below (`PROPTEST_CASES` raises them); the generator seed is
//! fixed too (`PROPTEST_RNG_SEED` picks another), so a CI failure replays as it was. A
//! failure prints the shrunk input.

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use xbarrier::{Device, Dim3, Error, FaultKind, Host, KernelBundle, LaunchConfig, Module};

/// A launch's own limit (`LaunchConfig::timeout`): far above what any case needs.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// Past this a call counts as hung (the launch timeout plus its slack).
const HANG_LIMIT: Duration = Duration::from_secs(40);
/// Most blocks a non-cooperative case runs; see `launch_geometry_is_ok_or_refused`.
const MAX_RUN_BLOCKS: u64 = 64;
const SEED: u64 = 0x0a91_9e57;

fn config(cases: u32) -> ProptestConfig {
    let base = ProptestConfig::default();
    let cases = if std::env::var_os("PROPTEST_CASES").is_some() { base.cases.max(cases) } else { cases };
    let rng_seed = if base.rng_seed == RngSeed::Random { RngSeed::Fixed(SEED) } else { base.rng_seed };
    // No regression files: the tree is shared, and the fixed seed replays a failure anyway.
    ProptestConfig { cases, rng_seed, failure_persistence: None, max_shrink_time: 60_000, ..base }
}

fn device() -> Device<Host> {
    Device::<Host>::open(0).expect("the host device always exists")
}

fn bundle() -> &'static KernelBundle {
    static BUNDLE: OnceLock<KernelBundle> = OnceLock::new();
    BUNDLE.get_or_init(|| xbarrier_conformance::bundle().expect("the conformance bundle"))
}

fn module() -> Module<Host> {
    device().load(bundle()).expect("the conformance kernels load on the host")
}

/// Runs `f` on a helper thread; a panic inside it, or no answer within `HANG_LIMIT`, fails
/// the case (the hung thread is left behind: the test has failed anyway).
fn within<T: Send + 'static>(what: String, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG_LIMIT) {
        Ok(value) => {
            let _ = worker.join();
            value
        }
        Err(RecvTimeoutError::Timeout) => panic!("{what} did not return within {HANG_LIMIT:?} (a hang)"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what} panicked (see the message above)"),
    }
}

/// One extent of a grid or block: 0, small, the block limit and one past it.
fn extent(small: std::ops::RangeInclusive<u32>) -> impl Strategy<Value = u32> {
    prop_oneof![
        12 => small,
        1 => Just(0u32),
        1 => Just(1024u32),
        1 => Just(1025u32),
    ]
}

/// Three extents, one of which may be u32::MAX. Two or three huge extents, whose product
/// overflows a u64, are `dim3_count_of_huge_extents_does_not_overflow`'s.
fn dim3(small: std::ops::RangeInclusive<u32>) -> impl Strategy<Value = Dim3> {
    let huge = prop_oneof![5 => Just(None), 1 => (0usize..3).prop_map(Some)];
    (extent(small.clone()), extent(small.clone()), extent(small), huge).prop_map(|(x, y, z, huge)| {
        let mut d = [x, y, z];
        if let Some(i) = huge {
            d[i] = u32::MAX;
        }
        Dim3 { x: d[0], y: d[1], z: d[2] }
    })
}

/// Dynamic shared memory per block: none, a little, up to the host's 1 MiB, the limit itself,
/// one byte past it, and far past it.
fn shared_bytes() -> impl Strategy<Value = u32> {
    prop_oneof![
        2 => Just(0u32),
        4 => 1u32..=65_536,
        1 => 65_537u32..=(1 << 20) - 1,
        1 => Just(1u32 << 20),
        1 => Just((1u32 << 20) + 1),
        1 => (1u32 << 20) + 2..=u32::MAX,
    ]
}

/// An element count: 0, small, a count whose bytes need 4 TiB (refused or lazily granted),
/// counts whose byte size overflows `isize` / `usize`, and `usize::MAX`.
fn element_count() -> impl Strategy<Value = usize> {
    prop_oneof![
        2 => Just(0usize),
        6 => 1usize..=4096,
        1 => Just(1usize << 40),
        1 => Just(usize::MAX / 8),
        1 => Just(usize::MAX / 4 + 1),
        1 => Just(usize::MAX),
    ]
}

/// An offset or length around a buffer of `len` elements: inside, at the end, just past it,
/// or absurd.
fn around(len: usize) -> impl Strategy<Value = usize> {
    let end = len.min(1 << 12);
    prop_oneof![
        4 => 0..=end,
        1 => Just(len),
        1 => Just(len.saturating_add(1)),
        1 => Just(usize::MAX),
    ]
}

fn is_launch_refusal(err: &Error) -> bool {
    matches!(err, Error::InvalidArgument { call: "launch", .. })
}

proptest! {
    #![proptest_config(config(256))]

    /// Any grid and block shape (extents 0, 1-4 / 1-8, 1024, 1025, one may be u32::MAX), dynamic shared
    /// size (`shared_bytes`) and cooperative flag, on `xbc_round_trip` with 1-3 phases: the
    /// launch succeeds exactly when `LaunchConfig::validate` accepts the configuration for
    /// this device, except that the host may refuse a cooperative grid whose threads it cannot
    /// keep resident; every refusal is `Error::InvalidArgument { call: "launch" }`.
    ///
    /// Accepted non-cooperative grids of more than `MAX_RUN_BLOCKS` blocks are not run, to
    /// keep the test short; `huge_grid_stops_at_its_timeout` runs grids of u32::MAX blocks.
    #[test]
    fn launch_geometry_is_ok_or_refused(
        grid in dim3(1..=4),
        block in dim3(1..=8),
        shared in shared_bytes(),
        cooperative in any::<bool>(),
        phases in 1u32..=3,
    ) {
        let device = device();
        let mut launch = LaunchConfig::new(grid, block).shared(shared).timeout(LAUNCH_TIMEOUT);
        launch.cooperative = cooperative;
        let valid = launch.validate(device.info()).is_ok();
        prop_assume!(!valid || cooperative || grid.count() <= MAX_RUN_BLOCKS);

        let what = format!("launch of xbc_round_trip({phases}) with {launch:?}");
        let config = launch.clone();
        let result = within(what.clone(), move || {
            let module = module();
            let kernel = module.kernel("xbc_round_trip")?;
            let stream = device.stream()?;
            // SAFETY: xbc_round_trip(unsigned phases) takes exactly this argument.
            unsafe { stream.launch(&kernel, &config, &[phases.into()])? };
            stream.synchronize()
        });
        match result {
            Ok(()) => prop_assert!(valid, "{what}: ran, but validate() refuses it"),
            Err(Error::InvalidArgument { call: "launch", reason }) if valid => prop_assert!(
                cooperative && reason.contains("resident"),
                "{what}: refused although validate() accepts it: {reason}"
            ),
            Err(err) => prop_assert!(!valid && is_launch_refusal(&err), "{what}: {err:?}"),
        }
    }
}

proptest! {
    #![proptest_config(config(96))]

    /// Dynamic shared memory is usable up to the device's limit and refused past it:
    /// `xbc_copy_tx` copies `bytes` (the shared size rounded down to 16, at most 64 KiB) into
    /// it with `memcpy_async_tx` in `pieces` (1..=threads) on a block of 1-64 threads, for 1-2
    /// rounds, and checks every word. With no dynamic shared memory at all its 0-byte copy
    /// goes to a null destination, which checked builds report as `FaultKind::CopyArgs`.
    #[test]
    fn dynamic_shared_memory_is_usable_or_refused(
        shared in shared_bytes(),
        threads in 1u32..=64,
        pieces_seed in any::<u32>(),
        rounds in 1u32..=2,
    ) {
        let device = device();
        let max = device.info().max_dynamic_shared_bytes;
        let bytes = (shared.min(65_536) / 16) * 16;
        let pieces = 1 + pieces_seed % threads;
        let launch = LaunchConfig::new(1, threads).shared(shared).timeout(LAUNCH_TIMEOUT);
        let what = format!("xbc_copy_tx of {bytes} bytes in {pieces} pieces, {rounds} rounds, with {launch:?}");
        let config = launch.clone();
        let result = within(what.clone(), move || -> xbarrier::Result<Vec<u64>> {
            let words = (bytes / 4 + 4 * rounds) as usize;
            let src: Vec<u32> = (0..words as u32).map(|w| w.wrapping_mul(2_654_435_761) ^ 0x5eed).collect();
            let src = device.upload(&src)?;
            let report = device.alloc::<u64>(4)?;
            let module = module();
            let kernel = module.kernel("xbc_copy_tx")?;
            let stream = device.stream()?;
            let args = [src.arg(), report.arg(), bytes.into(), pieces.into(), rounds.into()];
            // SAFETY: xbc_copy_tx(const unsigned* src, unsigned long long* report, unsigned bytes,
            // unsigned pieces, unsigned rounds); src holds bytes/4 + 4*rounds words, report 4, and
            // both outlive the synchronize below.
            unsafe { stream.launch(&kernel, &config, &args)? };
            stream.synchronize()?;
            report.download()
        });
        let no_shared_fault = |err: &Error| matches!(err, Error::Fault(f) if f.kind == FaultKind::CopyArgs);
        // Only checked device code reports the copy into no shared memory.
        let checked = bundle().checked();
        match result {
            Err(err) if shared == 0 && checked => prop_assert!(no_shared_fault(&err), "{what}: {err:?}"),
            Ok(_) if shared == 0 && checked => prop_assert!(false, "{what}: copy to no shared memory ran"),
            Ok(report) => {
                prop_assert!(shared <= max, "{what}: ran with more shared memory than the device's {max}");
                prop_assert_eq!(report[0], 0, "{}: {} wrong words, first at {} (got {:#x}, want {:#x})",
                    what, report[0], report[1], report[2], report[3]);
            }
            Err(err) => prop_assert!(shared > max && is_launch_refusal(&err), "{what}: {err:?}"),
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Allocation of any element count (`element_count`) either gives a buffer of exactly that
    /// length, or `Error::InvalidArgument` (byte size overflows or is no valid layout) or
    /// `Error::OutOfMemory`. On a buffer, `write_at`, `read_at` (offsets and lengths from
    /// `around`, data at most 4096 elements) and `arg_at` succeed exactly when the range lies
    /// inside it, and refuse it with `Error::InvalidArgument` otherwise; what was written reads
    /// back.
    #[test]
    fn buffers_are_ok_or_typed_errors(
        (len, accesses, index) in element_count().prop_flat_map(|len| {
            (Just(len), proptest::collection::vec((around(len), 0usize..=4096), 1..4), around(len))
        }),
    ) {
        let device = device();
        let what = format!("alloc::<u32>({len})");
        let checks = within(what.clone(), move || -> Result<(), String> {
            let mut buffer = match device.alloc::<u32>(len) {
                Ok(buffer) => buffer,
                Err(Error::InvalidArgument { call: "alloc", .. } | Error::OutOfMemory { .. }) => {
                    // Refused: only for sizes no machine can give (above 1 TiB here).
                    let bytes = len.checked_mul(4);
                    return if bytes.is_none_or(|b| b >= 1 << 40) { Ok(()) } else { Err(format!("{len} elements refused")) };
                }
                Err(other) => return Err(format!("untyped refusal {other:?}")),
            };
            if buffer.len() != len {
                return Err(format!("buffer of {} elements", buffer.len()));
            }
            for &(offset, count) in &accesses {
                let inside = offset.checked_add(count).is_some_and(|end| end <= len);
                let data: Vec<u32> = (0..count as u32).map(|i| i ^ 0xa5a5_0000).collect();
                match (buffer.write_at(offset, &data), inside) {
                    (Ok(()), true) => {}
                    (Err(Error::InvalidArgument { .. }), false) => {}
                    (other, _) => return Err(format!("write_at({offset}, {count} elements): {other:?}")),
                }
                let mut back = vec![0u32; count];
                match (buffer.read_at(offset, &mut back), inside) {
                    (Ok(()), true) if back == data => {}
                    (Ok(()), true) => return Err(format!("read_at({offset}, {count}) read back other data")),
                    (Err(Error::InvalidArgument { .. }), false) => {}
                    (other, _) => return Err(format!("read_at({offset}, {count} elements): {other:?}")),
                }
            }
            match (buffer.arg_at(index), index <= len) {
                (Ok(_), true) | (Err(Error::InvalidArgument { .. }), false) => Ok(()),
                (other, _) => Err(format!("arg_at({index}): {other:?}")),
            }
        });
        prop_assert!(checks.is_ok(), "{what}: {}", checks.unwrap_err());
    }

}

proptest! {
    #![proptest_config(config(128))]

    /// `Stream::copy` copies whole buffers of equal length (0-4096 elements) and refuses
    /// unequal ones with `Error::InvalidArgument`.
    #[test]
    fn stream_copy_needs_equal_lengths(src_len in 0usize..=4096, dst_len in 0usize..=4096, same in any::<bool>()) {
        let dst_len = if same { src_len } else { dst_len };
        let device = device();
        let data: Vec<u64> = (0..src_len as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let src = device.upload(&data).expect("small upload");
        let mut dst = device.alloc::<u64>(dst_len).expect("small alloc");
        let stream = device.stream().expect("stream");
        match stream.copy(&mut dst, &src).and_then(|()| stream.synchronize()) {
            Ok(()) => {
                prop_assert_eq!(src_len, dst_len);
                prop_assert_eq!(dst.download().expect("download"), data);
            }
            Err(Error::InvalidArgument { call: "Stream::copy", .. }) => prop_assert_ne!(src_len, dst_len),
            Err(other) => prop_assert!(false, "copy of {} into {} elements: {:?}", src_len, dst_len, other),
        }
    }
}

/// A grid of u32::MAX blocks with a 200 ms `LaunchConfig::timeout` must end with
/// `Error::LaunchTimeout` soon after. Found by these properties: the host backend used to run
/// every remaining block after the deadline (20 000 blocks of 32 threads took 1.8 s against
/// a 0.1 s timeout, u32::MAX blocks would have taken days).
#[test]
fn huge_grid_stops_at_its_timeout() {
    for (phases, block) in [(100_000u32, 32u32), (1, 1)] {
        let launch = LaunchConfig::new(u32::MAX, block).timeout(Duration::from_millis(200));
        let what = format!("xbc_round_trip({phases}) on {launch:?}");
        let start = Instant::now();
        let result = within(what.clone(), move || {
            let module = module();
            let kernel = module.kernel("xbc_round_trip")?;
            let stream = device().stream()?;
            // SAFETY: xbc_round_trip(unsigned phases) takes exactly this argument.
            unsafe { stream.launch(&kernel, &launch, &[phases.into()]) }
        });
        assert!(matches!(result, Err(Error::LaunchTimeout { .. })), "{what}: {result:?}");
        assert!(start.elapsed() < Duration::from_secs(5), "{what}: took {:?}", start.elapsed());
    }
}

/// A launch that outlives its timeout must fail with `Error::LaunchTimeout` ("Backends that
/// cannot abort a running kernel report the overrun after it ends"). On the host, 200 000
/// one-thread blocks of one phase took 0.3-0.5 s against a 50 ms timeout and returned `Ok`
/// before the fix: each block ended in its first scheduling round, and the deadline was
/// looked at every 64th.
#[test]
fn overrun_of_short_blocks_is_reported() {
    let launch = LaunchConfig::new(200_000, 1).timeout(Duration::from_millis(50));
    let start = Instant::now();
    let result = within("xbc_round_trip(1) on 200000 x 1".into(), move || {
        let module = module();
        let kernel = module.kernel("xbc_round_trip")?;
        let stream = device().stream()?;
        // SAFETY: xbc_round_trip(unsigned phases) takes exactly this argument.
        unsafe { stream.launch(&kernel, &launch, &[1u32.into()]) }
    });
    let took = start.elapsed();
    if took > Duration::from_millis(50) {
        assert!(matches!(result, Err(Error::LaunchTimeout { .. })), "took {took:?} against 50 ms, got {result:?}");
    }
}

/// `LaunchConfig::validate` must refuse a block whose extents multiply past u64 with
/// `Error::InvalidArgument`. Before the fix `Dim3::count` multiplied the three extents in u64
/// unchecked: in debug builds a block of (u32::MAX, u32::MAX, u32::MAX) panicked with "attempt
/// to multiply with overflow"; in release builds the product wrapped, and (769546, 494770,
/// 48448661), whose product is 2^64 + 4, passed as a block of 4 threads.
#[test]
fn dim3_count_of_huge_extents_does_not_overflow() {
    let info = device().info().clone();
    for block in [(u32::MAX, u32::MAX, u32::MAX), (769_546, 494_770, 48_448_661)] {
        let launch = LaunchConfig::new(1, block);
        let result = std::panic::catch_unwind(|| launch.validate(&info));
        assert!(
            matches!(result, Ok(Err(Error::InvalidArgument { call: "launch", .. }))),
            "block {block:?}: validate() gave {:?}",
            result.map_err(|_| "a panic")
        );
    }
}
