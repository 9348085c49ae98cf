//! The HIP backend end to end against a stand-in runtime (`fake_hip.c`), so that its
//! plumbing (library loading, attributes, the kernels' clock rate, copies, modules, argument
//! marshalling, launches, fault records, events, time limits, peer access between devices,
//! error mapping) runs where there is no AMD GPU.
//!
//! Each test compiles `fake_hip.c` into a `libamdhip64.so` with the C compiler (`$CC`, else
//! `cc`; once per test binary and build of the fake) and re-runs this test binary, the one
//! test alone, with `LD_LIBRARY_PATH` pointing at it, since the loader reads that variable
//! only at process start; the child runs the test's scenario. `XBAR_FAKE_HIP_*` variables set
//! the fake up: what `hipDeviceAttributeWallClockRate` answers, how many devices there are,
//! and the link between them (see `fake_hip.c`).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use xbarrier_api::{
    Backend, BackendKind, BarrierOp, Device, Error, FaultKind, KernelArg, KernelBundle, Launch, LaunchArg,
    LaunchConfig, PeerPlacement, Variant,
};
use xbarrier_backend_hip::{Hip, HipDevice, WallClock};

const CHILD: &str = "XBAR_FAKE_HIP_CHILD";

/// Whether this process is a child that runs a scenario.
fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// A build of the fake runtime: a name for its directory, and the C compiler's extra flags.
struct Build {
    name: &'static str,
    flags: &'static [&'static str],
}

/// Every entry point the backend binds.
const FULL: Build = Build { name: "full", flags: &[] };
/// A runtime without the peer access entry points.
const NO_P2P: Build = Build { name: "no-p2p", flags: &["-DXBAR_FAKE_HIP_NO_P2P"] };
/// A runtime without `hipStreamWaitEvent`.
const NO_STREAM_WAIT: Build = Build { name: "no-stream-wait", flags: &["-DXBAR_FAKE_HIP_NO_STREAM_WAIT"] };

/// The directory holding `build` of the fake as `libamdhip64.so`, compiled on first use.
fn fake_library_dir(build: &Build) -> PathBuf {
    static BUILT: Mutex<Vec<&str>> = Mutex::new(Vec::new());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-hip").join(build.name);
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if !built.contains(&build.name) {
        compile(build, &dir);
        built.push(build.name);
    }
    dir
}

fn compile(build: &Build, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_hip.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1"])
        .args(build.flags)
        .arg("-o")
        .arg(dir.join("libamdhip64.so"))
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("this test needs a C compiler (`{cc}`, or set CC): {e}"));
    assert!(status.success(), "{cc} failed on {}", source.display());
}

/// Runs test `name` alone in a child on `build` of the fake runtime with the `settings`
/// variables (every other `XBAR_FAKE_HIP_*` unset), and asserts that it passed.
fn run_child(name: &str, build: &Build, settings: &[(&str, &str)]) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", name, "--nocapture", "--test-threads=1"]);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("XBAR_FAKE_HIP_") {
            command.env_remove(key);
        }
    }
    command
        .env(CHILD, "1")
        .env("LD_LIBRARY_PATH", fake_library_dir(build))
        .env_remove("ROCM_PATH")
        .env_remove("HIP_PATH")
        .envs(settings.iter().copied());
    let output = command.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    eprintln!("{text}");
    assert!(
        output.status.success() && text.contains("1 passed"),
        "{name} failed on the {} fake with {settings:?}",
        build.name
    );
}

#[test]
fn backend_runs_on_a_fake_runtime() {
    if in_child() {
        scenario();
    } else {
        run_child("backend_runs_on_a_fake_runtime", &FULL, &[]);
    }
}

/// What a module's `xb_clock_ns_per_tick_q32` holds after loading on `device`: the fake's
/// `clock` kernel copies it out.
fn module_clock(device: &HipDevice, image: &'static [u8]) -> u64 {
    let module = Hip::load_module(device, "clocked", image).unwrap();
    let kernel = Hip::function(device, &module, "clock").unwrap();
    let stream = Hip::create_stream(device).unwrap();
    let out = Hip::alloc(device, 8).unwrap();
    // SAFETY: the fake clock kernel takes one pointer to a u64; `out` outlives the synchronize.
    unsafe { Hip::launch(device, &stream, &kernel, &LaunchConfig::new(1, 1), &[KernelArg::Ptr(Hip::address(&out))]) }
        .unwrap();
    Hip::synchronize(device, &stream).unwrap();
    let mut bytes = [0u8; 8];
    Hip::read(device, &out, 0, &mut bytes).unwrap();
    u64::from_ne_bytes(bytes)
}

/// The rate the runtime reports reaches every module as its multiplier, for several rates;
/// a runtime that does not report one leaves the 100 MHz default.
#[test]
fn wall_clock_rate_reaches_the_module_global() {
    if !in_child() {
        for setting in ["25000", "99999", "unknown", "0"] {
            run_child("wall_clock_rate_reaches_the_module_global", &FULL, &[("XBAR_FAKE_HIP_WALL_CLOCK", setting)]);
        }
        return;
    }
    let setting = std::env::var("XBAR_FAKE_HIP_WALL_CLOCK").unwrap();
    // Nanoseconds per tick in 32.32 fixed point, worked out by hand: 25 MHz is 40 ns a tick;
    // 99.999 MHz is 10.000100001... ns, 2^32 times that rounded; 100 MHz is 10 ns.
    let (clock, multiplier) = match setting.as_str() {
        "25000" => (WallClock { khz: 25_000, reported: true }, 40u64 << 32),
        "99999" => (WallClock { khz: 99_999, reported: true }, 42_950_102_461),
        "unknown" | "0" => (WallClock { khz: 100_000, reported: false }, 10u64 << 32),
        other => panic!("no expectation for XBAR_FAKE_HIP_WALL_CLOCK={other}"),
    };
    let device = Hip::open(0).unwrap();
    assert_eq!(device.wall_clock(), clock);
    assert_eq!(module_clock(&device, b"FAKE module with xb_clock_ns_per_tick_q32"), multiplier);
    // Loading a second module writes it too (each module has its own global).
    assert_eq!(module_clock(&device, b"FAKE xb_clock_ns_per_tick_q32 and xb_fault_record_slot"), multiplier);
}

/// A failing `hipDeviceGetAttribute` for the rate is the crate's driver error, naming the
/// call and keeping the runtime's code.
#[test]
fn wall_clock_rate_errors_are_driver_errors() {
    if !in_child() {
        run_child("wall_clock_rate_errors_are_driver_errors", &FULL, &[("XBAR_FAKE_HIP_WALL_CLOCK", "error:801")]);
        return;
    }
    assert_eq!(Hip::device_count().unwrap(), 1);
    match Hip::open(0) {
        Err(e @ Error::Driver { call: "hipDeviceGetAttribute(hipDeviceAttributeWallClockRate)", code: 801, .. }) => {
            assert!(e.to_string().contains("hipDeviceAttributeWallClockRate"), "{e}");
        }
        Err(e) => panic!("expected the wall clock query's driver error, got {e}"),
        Ok(_) => panic!("expected the wall clock query's driver error, got a device"),
    }
}

fn scenario() {
    assert_eq!(Hip::device_count().unwrap(), 1);
    match Hip::open(1) {
        Err(Error::NoDevice { ordinal: 1, found: 1, .. }) => {}
        other => panic!("expected NoDevice, got {:?}", other.err()),
    }
    let device = Hip::open(0).unwrap();
    assert!(device.library().ends_with("libamdhip64.so"), "{}", device.library());
    assert_eq!(device.runtime_version(), Some(60342134));
    assert_eq!(device.driver_version(), Some(60342133));
    assert_eq!(device.gcn_arch_name(), Some("gfx942:sramecc+:xnack-"));
    assert_eq!(device.wall_clock(), WallClock { khz: 100_000, reported: true });
    let info = Hip::info(&device);
    assert_eq!(info.name, "Fake AMD Instinct");
    assert_eq!(info.arch, "gfx942");
    assert_eq!((info.wave_size, info.multiprocessors, info.max_cooperative_blocks), (64, 104, 104));
    assert_eq!((info.max_threads_per_block, info.max_dynamic_shared_bytes), (1024, 65536));

    // Memory: zero-filled, offsets, bounds.
    let mut memory = Hip::alloc(&device, 100).unwrap();
    let mut bytes = [1u8; 100];
    Hip::read(&device, &memory, 0, &mut bytes).unwrap();
    assert!(bytes.iter().all(|&b| b == 0));
    Hip::write(&device, &mut memory, 10, &[7, 8, 9]).unwrap();
    let mut out = [0u8; 5];
    Hip::read(&device, &memory, 9, &mut out).unwrap();
    assert_eq!(out, [0, 7, 8, 9, 0]);
    assert!(matches!(Hip::read(&device, &memory, 98, &mut out), Err(Error::InvalidArgument { .. })));
    assert!(matches!(Hip::alloc(&device, 1 << 41), Err(Error::OutOfMemory { .. })));

    // Memory shared with host threads: this runtime reports native host atomics, so it is
    // pinned host memory (hipHostMalloc, portable, mapped and coherent), zeroed, freed by
    // hipHostFree.
    let shared = Hip::alloc_system(&device, &[], 64).unwrap();
    // SAFETY: the address of 64 live bytes of host memory.
    let bytes = unsafe { std::slice::from_raw_parts(Hip::address(&shared) as *const u8, 64) };
    assert!(bytes.iter().all(|&b| b == 0), "the backend zeroes it (the fake fills 0xab)");
    let query_stream = Hip::create_stream(&device).unwrap();
    assert!(Hip::query(&device, &query_stream).unwrap(), "an idle stream has finished");
    drop(shared);
    // SAFETY: a function of the fake runtime this process loaded, taking nothing.
    let pinned_live = unsafe {
        let lib = libloading::Library::new("libamdhip64.so").unwrap();
        let live: libloading::Symbol<unsafe extern "C" fn() -> i32> = lib.get(b"xbar_fake_hip_pinned_live").unwrap();
        live()
    };
    assert_eq!(pinned_live, 0, "pinned memory freed with hipHostFree");
    // A runtime that maps pinned memory elsewhere for the device (no unified addressing):
    // kernels could not use the host's pointer, so the allocation is refused and freed.
    // SAFETY: functions of the fake runtime this process loaded.
    let pinned_after_refusal = unsafe {
        let lib = libloading::Library::new("libamdhip64.so").unwrap();
        let offset: libloading::Symbol<unsafe extern "C" fn(std::ffi::c_long)> =
            lib.get(b"xbar_fake_hip_set_device_pointer_offset").unwrap();
        offset(4096);
        let refused = Hip::alloc_system(&device, &[], 64);
        offset(0);
        assert!(
            matches!(&refused, Err(Error::Unsupported { reason, .. }) if reason.contains("no unified addressing")),
            "{:?}",
            refused.err()
        );
        let live: libloading::Symbol<unsafe extern "C" fn() -> i32> = lib.get(b"xbar_fake_hip_pinned_live").unwrap();
        live()
    };
    assert_eq!(pinned_after_refusal, 0, "a refused allocation is freed");

    // Device-to-device copies on a stream: offsets, bounds.
    let copy_stream = Hip::create_stream(&device).unwrap();
    let mut copy = Hip::alloc(&device, 8).unwrap();
    Hip::copy_device(&device, &copy_stream, &mut copy, 2, &memory, 9, 5).unwrap();
    Hip::synchronize(&device, &copy_stream).unwrap();
    let mut copied = [9u8; 8];
    Hip::read(&device, &copy, 0, &mut copied).unwrap();
    assert_eq!(copied, [0, 0, 0, 7, 8, 9, 0, 0]);
    assert!(matches!(
        Hip::copy_device(&device, &copy_stream, &mut copy, 4, &memory, 0, 5),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Hip::copy_device(&device, &copy_stream, &mut copy, 0, &memory, 99, 2),
        Err(Error::InvalidArgument { .. })
    ));

    // Modules and functions.
    match Hip::load_module(&device, "junk", b"ELF?") {
        Err(Error::Driver { call: "hipModuleLoadData", code: 200, name, .. }) => {
            assert_eq!(name, "hipErrorInvalidImage: invalid kernel image")
        }
        other => panic!("expected a driver error, got {:?}", other.err()),
    }
    let module = Hip::load_module(&device, "fake", b"FAKE module with xb_fault_record_slot").unwrap();
    match Hip::function(&device, &module, "nope") {
        Err(Error::KernelNotFound { module, kernel }) => {
            assert_eq!((module.as_str(), kernel.as_str()), ("fake", "nope"))
        }
        other => panic!("expected KernelNotFound, got {:?}", other.err()),
    }
    let stream = Hip::create_stream(&device).unwrap();

    // Every argument type reaches the kernel as its C type.
    let echo = Hip::function(&device, &module, "echo").unwrap();
    let out = Hip::alloc(&device, 9 * 8).unwrap();
    let args = [
        KernelArg::Ptr(Hip::address(&out)),
        KernelArg::U32(0xdead_beef),
        KernelArg::F32(-1.25),
        KernelArg::U64(0x0123_4567_89ab_cdef),
        KernelArg::F64(3.5),
        KernelArg::I32(-7),
    ];
    let read_words = || {
        let mut bytes = [0u8; 72];
        Hip::read(&device, &out, 0, &mut bytes).unwrap();
        bytes.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect::<Vec<u64>>()
    };
    let config = LaunchConfig::new((2, 3, 4), (8, 4, 2)).shared(1000);
    // SAFETY: the fake echo takes exactly these arguments; `out` outlives the synchronize.
    unsafe { Hip::launch(&device, &stream, &echo, &config, &args) }.unwrap();
    Hip::synchronize(&device, &stream).unwrap();
    let words = read_words();
    assert_eq!(words[0], 0xdead_beef);
    assert_eq!(words[1], u64::from((-1.25f32).to_bits()));
    assert_eq!(words[2], 0x0123_4567_89ab_cdef);
    assert_eq!(f64::from_bits(words[3]), 3.5);
    assert_eq!(words[4] as i64, -7);
    assert_eq!(&words[5..], [24, 64, 1000, 0]);
    // SAFETY: as above.
    unsafe { Hip::launch(&device, &stream, &echo, &LaunchConfig::new(104, 64).cooperative(), &args) }.unwrap();
    Hip::synchronize(&device, &stream).unwrap();
    assert_eq!(&read_words()[5..], [104, 64, 0, 1]);
    // SAFETY: as above; the runtime refuses the grid.
    match unsafe { Hip::launch(&device, &stream, &echo, &LaunchConfig::new(105, 64).cooperative(), &args) } {
        Err(Error::Driver { call: "hipModuleLaunchCooperativeKernel", code: 720, .. }) => {}
        other => panic!("expected the runtime to refuse, got {other:?}"),
    }

    // Fault records are read once, then cleared.
    let fault = Hip::function(&device, &module, "fault").unwrap();
    // SAFETY: fault(unsigned).
    unsafe { Hip::launch(&device, &stream, &fault, &LaunchConfig::new(1, 32), &[KernelArg::U32(3)]) }.unwrap();
    Hip::synchronize(&device, &stream).unwrap();
    let record = Hip::take_fault(&device, &module).unwrap().expect("the kernel recorded a fault");
    assert_eq!((record.kind, record.op, record.thread, record.value, record.limit), (3, 2, [3, 0, 0], 5, 2));
    assert_eq!(Hip::take_fault(&device, &module).unwrap(), None, "cleared");
    // A module without the global reports none.
    let plain = Hip::load_module(&device, "plain", b"FAKE module").unwrap();
    let fault_plain = Hip::function(&device, &plain, "fault").unwrap();
    // SAFETY: as above (the fake writes into its own module's record, which nobody reads).
    unsafe { Hip::launch(&device, &stream, &fault_plain, &LaunchConfig::new(1, 1), &[KernelArg::U32(3)]) }.unwrap();
    Hip::synchronize(&device, &stream).unwrap();
    assert_eq!(Hip::take_fault(&device, &plain).unwrap(), None);

    // Events and time limits.
    let spin = Hip::function(&device, &plain, "spin").unwrap();
    let start = Hip::record(&device, &stream).unwrap();
    // SAFETY: spin(u64).
    unsafe { Hip::launch(&device, &stream, &spin, &LaunchConfig::new(1, 1), &[KernelArg::U64(20_000_000)]) }.unwrap();
    let end = Hip::record(&device, &stream).unwrap();
    Hip::synchronize(&device, &stream).unwrap();
    let took = Hip::elapsed(&start, &end).unwrap();
    assert!(took >= Duration::from_millis(15) && took < Duration::from_secs(5), "{took:?}");

    // Through the generic wrappers: a stream reports a fault once, naming the kernel, and an
    // overrun of a launch's time limit after the kernel ended.
    let image = b"FAKE module with xb_fault_record_slot".to_vec();
    let bytes = KernelBundle::encode(true, &[(BackendKind::Hip, Variant::Default, image)]);
    let bundle = KernelBundle::parse("fake", Box::leak(bytes.into_boxed_slice())).unwrap();
    let device = Device::<Hip>::open(0).unwrap();
    let module = device.load(&bundle).unwrap();
    assert!(module.checked());
    let stream = device.stream().unwrap();
    let fault = module.kernel("fault").unwrap();
    // SAFETY: fault(unsigned).
    unsafe { stream.launch(&fault, &LaunchConfig::new(1, 32), &[KernelArg::U32(3)]) }.unwrap();
    match stream.synchronize() {
        Err(Error::Fault(f)) => {
            assert_eq!((f.kernel.as_str(), f.kind, f.op), ("fault", FaultKind::OverArrival, BarrierOp::Arrive));
            assert_eq!((f.record.thread, f.record.value, f.record.limit), ([3, 0, 0], 5, 2));
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    stream.synchronize().unwrap();
    let spin = module.kernel("spin").unwrap();
    let config = LaunchConfig::new(1, 1).timeout(Duration::from_millis(2));
    // SAFETY: spin(u64).
    unsafe { stream.launch(&spin, &config, &[KernelArg::U64(20_000_000)]) }.unwrap();
    match stream.synchronize() {
        Err(Error::LaunchTimeout { kernel, .. }) => assert_eq!(kernel, "spin"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    stream.synchronize().unwrap();
}

/// The fake runtime this process loaded, for its functions for the tests.
fn fake_runtime() -> libloading::Library {
    // SAFETY: the fake runtime is loaded already (the backend opened it by this name); this
    // only takes another reference to it.
    unsafe { libloading::Library::new("libamdhip64.so") }.expect("the fake runtime is loaded")
}

/// How often the fake's peer access entry point `name`, or hipStreamWaitEvent, was called.
fn calls(name: &CStr) -> c_int {
    let lib = fake_runtime();
    // SAFETY: xbar_fake_hip_calls(const char*) -> int; `name` is a C string.
    unsafe {
        let calls = lib.get::<unsafe extern "C" fn(*const c_char) -> c_int>(b"xbar_fake_hip_calls").unwrap();
        calls(name.as_ptr())
    }
}

/// Whether kernels on `device` may use `peer`'s memory, in the fake's books.
fn peer_enabled(device: c_int, peer: c_int) -> bool {
    let lib = fake_runtime();
    // SAFETY: xbar_fake_hip_peer_enabled(int, int) -> int.
    unsafe {
        let enabled = lib.get::<unsafe extern "C" fn(c_int, c_int) -> c_int>(b"xbar_fake_hip_peer_enabled").unwrap();
        enabled(device, peer) != 0
    }
}

/// How many allocations of every kind are live in the fake.
fn live_allocations() -> c_int {
    let lib = fake_runtime();
    // SAFETY: xbar_fake_hip_live_allocations() -> int.
    unsafe { lib.get::<unsafe extern "C" fn() -> c_int>(b"xbar_fake_hip_live_allocations").unwrap()() }
}

/// What the fake's `hipDeviceEnablePeerAccess(to, 0)` answers with device `from` current:
/// the runtime's own view of peer access, below the backend (which selects its device before
/// each call).
fn enable_directly(from: c_int, to: c_int) -> c_int {
    let lib = fake_runtime();
    // SAFETY: hipSetDevice(int) and hipDeviceEnablePeerAccess(int, unsigned) of the fake,
    // with ROCm's signatures.
    unsafe {
        let set = lib.get::<unsafe extern "C" fn(c_int) -> c_int>(b"hipSetDevice").unwrap();
        let enable = lib.get::<unsafe extern "C" fn(c_int, c_uint) -> c_int>(b"hipDeviceEnablePeerAccess").unwrap();
        assert_eq!(set(from), 0, "hipSetDevice({from})");
        enable(to, 0)
    }
}

/// A checked bundle of the fake's module (with a fault record), loaded on `device`.
fn fake_module(device: &Device<Hip>) -> xbarrier_api::Module<Hip> {
    let image = b"FAKE module with xb_fault_record_slot".to_vec();
    let bytes = KernelBundle::encode(true, &[(BackendKind::Hip, Variant::Default, image)]);
    let bundle = KernelBundle::parse("fake", Box::leak(bytes.into_boxed_slice())).unwrap();
    device.load(&bundle).unwrap()
}

/// Memory of device 0 that kernels on device 1 use (`Device::alloc_peer`): device 1 enables
/// peer access to device 0 once (a second allocation finds it enabled, which is success), and
/// a typed launch on device 1 takes the `PeerBuffer` and changes its data. A plain buffer of
/// device 0 is still refused there, and peer access goes one way.
#[test]
fn peer_memory_reaches_kernels_of_another_device() {
    if !in_child() {
        run_child("peer_memory_reaches_kernels_of_another_device", &FULL, &[("XBAR_FAKE_HIP_DEVICES", "2")]);
        return;
    }
    let (device, other) = (Device::<Hip>::open(0).unwrap(), Device::<Hip>::open(1).unwrap());
    let mut shared = device.alloc_peer::<f32>(64, &[&other]).expect("alloc_peer");
    assert_eq!(
        (calls(c"hipDeviceCanAccessPeer"), calls(c"hipDeviceGetP2PAttribute"), calls(c"hipDeviceEnablePeerAccess")),
        (1, 1, 1)
    );
    assert!(peer_enabled(1, 0) && !peer_enabled(0, 1), "device 1 reaches device 0's memory, not the other way");
    assert_eq!((shared.device_ordinal(), shared.devices()), (0, &[0, 1][..]));
    let values: Vec<f32> = (0..64).map(|i| i as f32).collect();
    shared.write_at(0, &values).expect("write_at");

    let module = fake_module(&other);
    let add = module.kernel("add").expect("add");
    let stream = other.stream().expect("stream on device 1");
    let config = LaunchConfig::new(1, 64);
    let args = [LaunchArg::peer(&shared), LaunchArg::from(64u32), LaunchArg::from(0.5f32)];
    // SAFETY: add(float* data, unsigned n, float f); the memory holds 64 floats.
    unsafe { Launch::start(&stream, &add, &config, &args) }.expect("launch on device 1").wait().expect("wait");
    let expected: Vec<f32> = values.iter().map(|v| v + 0.5).collect();
    assert_eq!(shared.download().expect("download"), expected, "device 1's kernel wrote device 0's memory");

    // Enabled already: the runtime says so, and the backend takes that as success.
    let mut again = device.alloc_peer::<u32>(4, &[&other]).expect("alloc_peer again");
    assert_eq!(calls(c"hipDeviceEnablePeerAccess"), 2);
    assert_eq!(again.download().expect("download"), [0; 4]);

    // A plain buffer of device 0 is still refused on device 1.
    let plain = device.upload(&[1.0f32; 64]).expect("upload");
    let args = [LaunchArg::buffer(&plain), LaunchArg::from(64u32), LaunchArg::from(1.0f32)];
    // SAFETY: as above; the launch is refused before anything runs.
    match unsafe { Launch::start(&stream, &add, &config, &args) } {
        Err(Error::DeviceMismatch { what, found: 0, stream: 1, .. }) => assert_eq!(what, "argument 1 (a buffer)"),
        Err(e) => panic!("expected a device mismatch, got {e}"),
        Ok(_) => panic!("a plain buffer of device 0 was launched on device 1"),
    }

    // One way only: device 0 enabled no peer, so its kernel cannot use device 1's memory (an
    // untyped launch does not check the devices of pointers; the fake runs it at once).
    let theirs = other.upload(&[1.0f32; 64]).expect("upload to device 1");
    let local_add = fake_module(&device).kernel("add").expect("add");
    let local = device.stream().expect("stream");
    // SAFETY: add(float* data, unsigned n, float f); the pointer is device 1's on purpose,
    // which the fake refuses (its device memory is checked host memory).
    match unsafe { local.launch(&local_add, &config, &[theirs.arg(), 64u32.into(), 1.0f32.into()]) } {
        Err(Error::Driver { call: "hipModuleLaunchKernel", code: 700, name, .. }) => {
            assert_eq!(name, "hipErrorIllegalAddress")
        }
        other => panic!("expected an illegal address, got {other:?}"),
    }
    assert_eq!(theirs.download().expect("download"), [1.0; 64]);
}

/// Where the devices cannot reach each other's memory, or reach it without native atomics,
/// or the runtime lacks the peer access entry points, device memory is `Unsupported` naming
/// what is missing, before anything is allocated or peer access enabled; system memory
/// (`alloc_peer_in`) is pinned host memory there (this runtime reports native atomics with
/// the host on every device), which kernels of both devices use.
#[test]
fn peer_memory_needs_a_path_with_native_atomics() {
    const NAME: &str = "peer_memory_needs_a_path_with_native_atomics";
    if !in_child() {
        for link in ["no-atomics", "none"] {
            run_child(NAME, &FULL, &[("XBAR_FAKE_HIP_DEVICES", "2"), ("XBAR_FAKE_HIP_P2P", link)]);
        }
        run_child(NAME, &NO_P2P, &[("XBAR_FAKE_HIP_DEVICES", "2")]);
        return;
    }
    let link = std::env::var("XBAR_FAKE_HIP_P2P").unwrap_or_else(|_| "missing entry points".to_owned());
    let (device, other) = (Device::<Hip>::open(0).unwrap(), Device::<Hip>::open(1).unwrap());
    let named = match link.as_str() {
        "none" => "hipDeviceCanAccessPeer reports no peer path from device 1 to device 0's memory",
        "no-atomics" => "hipDevP2PAttrNativeAtomicSupported is 0",
        _ => "libamdhip64.so lacks hipDeviceCanAccessPeer, hipDeviceGetP2PAttribute, hipDeviceEnablePeerAccess",
    };
    match device.alloc_peer::<f32>(64, &[&other]) {
        Err(Error::Unsupported { backend: BackendKind::Hip, what: "memory shared between devices", reason }) => {
            assert!(reason.contains(named), "{reason}")
        }
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("allocated peer memory with {link}"),
    }
    assert_eq!(live_allocations(), 0, "nothing was allocated");
    assert!(!peer_enabled(1, 0));
    let enables = calls(c"hipDeviceEnablePeerAccess");
    assert_eq!(enables, 0, "peer access is not enabled where it cannot serve");
    match link.as_str() {
        "none" => {
            assert_eq!(calls(c"hipDeviceGetP2PAttribute"), 0, "no link to ask about");
            assert_eq!(enable_directly(1, 0), 101, "hipErrorInvalidDevice, as ROCm answers without a path");
        }
        "no-atomics" => assert_eq!(calls(c"hipDeviceGetP2PAttribute"), 1),
        _ => assert_eq!(calls(c"hipDeviceCanAccessPeer"), 0),
    }

    let enables = calls(c"hipDeviceEnablePeerAccess");
    let mut shared = device.alloc_peer_in::<f32>(PeerPlacement::SystemMemory, 64, &[&other]).expect("alloc_peer_in");
    assert_eq!((shared.placement(), shared.devices()), (PeerPlacement::SystemMemory, &[0, 1][..]));
    assert_eq!(calls(c"hipDeviceEnablePeerAccess"), enables, "system memory needs no peer access");
    shared.write_at(0, &[1.0; 64]).expect("write_at");
    for (d, amount) in [(&other, 0.5f32), (&device, 2.0)] {
        let add = fake_module(d).kernel("add").expect("add");
        let stream = d.stream().expect("stream");
        let args = [LaunchArg::peer(&shared), LaunchArg::from(64u32), LaunchArg::from(amount)];
        // SAFETY: add(float* data, unsigned n, float f); the memory holds 64 floats.
        unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 64), &args) }
            .expect("launch")
            .wait()
            .expect("wait");
    }
    assert_eq!(shared.download().expect("download"), [3.5; 64], "both devices' kernels added");
}

/// A peer that is the device itself (its ordinal opened twice) needs no peer path and no
/// runtime call, even from a runtime without the peer access entry points; kernels on either
/// handle's streams use the memory. The runtime itself would refuse: a device is not its own
/// peer.
#[test]
fn peer_memory_of_one_device_opened_twice_needs_no_peer_access() {
    const NAME: &str = "peer_memory_of_one_device_opened_twice_needs_no_peer_access";
    if !in_child() {
        run_child(NAME, &FULL, &[]);
        run_child(NAME, &NO_P2P, &[]);
        return;
    }
    let (device, again) = (Device::<Hip>::open(0).unwrap(), Device::<Hip>::open(0).unwrap());
    let mut shared = device.alloc_peer::<f32>(64, &[&again]).expect("alloc_peer");
    assert_eq!(shared.devices(), [0]);
    for name in [c"hipDeviceCanAccessPeer", c"hipDeviceGetP2PAttribute", c"hipDeviceEnablePeerAccess"] {
        assert_eq!(calls(name), 0, "{name:?} was called");
    }
    shared.write_at(0, &[2.0; 64]).expect("write_at");
    let add = fake_module(&again).kernel("add").expect("add");
    let stream = again.stream().expect("stream");
    let args = [LaunchArg::peer(&shared), LaunchArg::from(64u32), LaunchArg::from(1.0f32)];
    // SAFETY: add(float* data, unsigned n, float f); the memory holds 64 floats.
    unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 64), &args) }.expect("launch").wait().expect("wait");
    assert_eq!(shared.download().expect("download"), [3.0; 64]);
    // SAFETY: only looks the symbol up.
    if unsafe { fake_runtime().get::<*const c_void>(b"hipDeviceEnablePeerAccess") }.is_ok() {
        assert_eq!(enable_directly(0, 0), 101, "hipErrorInvalidDevice: a device is not its own peer");
    }
}

/// `Stream::wait_event` on device 1's stream for an event recorded on device 0's stream is one
/// `hipStreamWaitEvent`, and the stream runs what comes after it; a runtime without the entry
/// point makes it `Unsupported`, naming what is missing, and the stream goes on working.
#[test]
fn a_stream_waits_for_an_event_of_another_device() {
    const NAME: &str = "a_stream_waits_for_an_event_of_another_device";
    if !in_child() {
        run_child(NAME, &FULL, &[("XBAR_FAKE_HIP_DEVICES", "2")]);
        run_child(NAME, &NO_STREAM_WAIT, &[("XBAR_FAKE_HIP_DEVICES", "2")]);
        return;
    }
    let (device, other) = (Device::<Hip>::open(0).unwrap(), Device::<Hip>::open(1).unwrap());
    let (stream, waiting) = (device.stream().expect("stream on device 0"), other.stream().expect("on device 1"));
    let done = stream.record().expect("record");
    // SAFETY: only looks the symbol up.
    let present = unsafe { fake_runtime().get::<*const c_void>(b"hipStreamWaitEvent") }.is_ok();
    match waiting.wait_event(&done) {
        Ok(()) => assert!(present && calls(c"hipStreamWaitEvent") == 1, "present: {present}"),
        Err(Error::Unsupported { backend: BackendKind::Hip, what: "a stream waiting for an event", reason }) => {
            assert!(!present && reason.contains("libamdhip64.so has no hipStreamWaitEvent"), "{reason}");
            assert_eq!(calls(c"hipStreamWaitEvent"), 0);
        }
        other => panic!("expected the wait (or Unsupported without the entry point), got {other:?}"),
    }
    let data = other.upload(&[1.0f32; 4]).expect("upload to device 1");
    let add = fake_module(&other).kernel("add").expect("add");
    let args = [LaunchArg::buffer(&data), LaunchArg::from(4u32), LaunchArg::from(0.5f32)];
    // SAFETY: add(float* data, unsigned n, float f); the buffer holds 4 floats.
    unsafe { Launch::start(&waiting, &add, &LaunchConfig::new(1, 4), &args) }.expect("launch").wait().expect("wait");
    assert_eq!(data.download().expect("download"), [1.5; 4]);
}
