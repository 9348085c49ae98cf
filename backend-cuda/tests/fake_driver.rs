//! The CUDA backend end to end against a stand-in driver (`fake_driver.c`), so that its
//! plumbing (loading and probing libcuda through cudarc, device attributes, copies, modules,
//! argument marshalling, the dynamic shared memory opt-in, fault records, time limits, peer
//! access between devices, and the driver's errors) runs where there is no NVIDIA GPU.
//! `gpu.rs` runs the same backend on a real one.
//!
//! Each test compiles `fake_driver.c` into a `libcuda.so` (and `libcuda.so.1`) with the C
//! compiler (`$CC`, else `cc`; once per test binary and build of the fake) and re-runs this
//! test binary, the one test alone, with `LD_LIBRARY_PATH` pointing at it, since the loader
//! reads that variable only at process start; the child runs the test's scenario, and the
//! parent fails the test if the child fails or runs past [`CHILD_LIMIT`]. `XBAR_FAKE_CUDA_*`
//! variables set the fake up (see `fake_driver.c`); `XBAR_FAKE_CUDA_LOG` names the file the
//! fake logs notable calls to, which the scenarios and the parent read.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use xbarrier_api::{
    Backend, BackendKind, BarrierOp, Device, DeviceCopy, Error, FaultKind, FaultRecord, KernelArg, KernelBundle,
    Launch, LaunchArg, LaunchConfig, PeerPlacement, Result, SystemBuffer, Variant,
};
use xbarrier_backend_cuda::Cuda;

const CHILD: &str = "XBAR_FAKE_CUDA_CHILD";
const LOG: &str = "XBAR_FAKE_CUDA_LOG";
/// How long a scenario may take before the parent calls it a hang.
const CHILD_LIMIT: Duration = Duration::from_secs(60);

/// A module of every fake kernel, with the fault record global of `abi.h`'s size.
const KERNELS: &str =
    "FAKECUDA kernel:echo kernel:add kernel:fault kernel:spin kernel:hang global:xb_fault_record_slot:88";

/// A build of the fake driver: the entry points it leaves out, to stand for an older driver.
struct Build {
    name: &'static str,
    hidden: &'static [&'static str],
}

/// Everything the backend uses.
const FULL: Build = Build { name: "full", hidden: &[] };
/// A driver before 12.8, without `cuEventElapsedTime_v2`.
const NO_ELAPSED_V2: Build = Build { name: "no-elapsed-v2", hidden: &["cuEventElapsedTime_v2"] };
/// A driver without two of the entry points driver.rs requires.
const MISSING: Build = Build { name: "missing", hidden: &["cuLaunchCooperativeKernel", "cuFuncSetAttribute"] };

/// Whether this process is a child that runs a scenario.
fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The directory holding `build` of the fake as `libcuda.so` and `libcuda.so.1`, compiled on
/// first use.
fn library_dir(build: &Build) -> PathBuf {
    static BUILT: Mutex<Vec<&str>> = Mutex::new(Vec::new());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-cuda").join(build.name);
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if !built.contains(&build.name) {
        compile(build, &dir);
        built.push(build.name);
    }
    dir
}

fn compile(build: &Build, dir: &Path) {
    std::fs::create_dir_all(dir).expect("creates the fake driver's directory");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = manifest.join("tests/fake_driver.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    // Staged under a name of this process, then renamed: another test binary may be loading it.
    let staged = dir.join(format!("libcuda.so.{}.tmp", std::process::id()));
    let mut command = Command::new(&cc);
    command
        .args(["-shared", "-fPIC", "-O1", "-std=gnu11", "-pthread", "-I"])
        .arg(manifest.join("../hip-src/include")) // xbarrier/abi.h: the fault record's layout
        .arg("-o")
        .arg(&staged)
        .arg(&source);
    // A version script makes the hidden entry points local: the library lacks them.
    let script = dir.join(format!("hidden.{}.map", std::process::id()));
    if !build.hidden.is_empty() {
        std::fs::write(&script, format!("{{ local: {}; }};\n", build.hidden.join("; "))).expect("writes the map");
        command.arg(format!("-Wl,--version-script={}", script.display()));
    }
    let status = command.status().unwrap_or_else(|e| panic!("this test needs a C compiler (`{cc}`, or set CC): {e}"));
    let _ = std::fs::remove_file(&script);
    assert!(status.success(), "{cc} failed on {}", source.display());
    std::fs::rename(&staged, dir.join("libcuda.so")).expect("installs the fake driver");
    // cudarc tries libcuda.so first; libcuda.so.1 is the name the driver is installed under.
    match std::os::unix::fs::symlink("libcuda.so", dir.join("libcuda.so.1")) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => panic!("links libcuda.so.1: {e}"),
        _ => {}
    }
}

/// Runs test `name` alone in a child on `build` of the fake with the `settings` variables,
/// asserts that it passed in time, and returns the fake's log.
fn run_child(name: &str, build: &Build, settings: &[(&str, &str)]) -> String {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let logs = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-cuda/logs");
    std::fs::create_dir_all(&logs).expect("creates the log directory");
    let log_path = logs.join(format!("{name}.{}.{}.log", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_file(&log_path);
    let mut library_path = OsString::from(library_dir(build));
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        library_path.push(":");
        library_path.push(old);
    }
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command.args(["--exact", name, "--nocapture", "--test-threads=1"]);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("XBAR_FAKE_CUDA_") {
            command.env_remove(key);
        }
    }
    command.env(CHILD, "1").env("LD_LIBRARY_PATH", library_path).env(LOG, &log_path).envs(settings.iter().copied());
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starts the child");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + CHILD_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("polls the child") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!("{}{}", stdout.join().expect("stdout"), stderr.join().expect("stderr"));
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    eprintln!("{text}\nfake driver log:\n{log}");
    let status = status.unwrap_or_else(|| panic!("{name} ({settings:?}) still ran after {CHILD_LIMIT:?}: a hang"));
    assert!(status.success() && text.contains("1 passed"), "{name} failed on the fake driver with {settings:?}");
    log
}

/// Asserts that the fake found every allocation, module, stream, event and context retain
/// released when the child ended (destroying a primary context releases what it held, so
/// that it logs what was still live then).
#[track_caller]
fn assert_all_released(log: &str) {
    let last = log.lines().rfind(|l| l.starts_with("exit:"));
    assert_eq!(last, Some("exit: allocations 0 modules 0 streams 0 events 0 retains 0"), "{log}");
    assert!(!log.lines().any(|l| l.contains("destroyed with")), "{log}");
}

/// The fake's log so far (in a child).
fn log() -> String {
    let path = std::env::var_os(LOG).expect("the parent names the log");
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The log's lines that start with `prefix`.
fn logged(prefix: &str) -> Vec<String> {
    log().lines().filter(|l| l.starts_with(prefix)).map(str::to_owned).collect()
}

/// How many of the log's lines are `line`.
fn logged_exactly(line: &str) -> usize {
    log().lines().filter(|l| *l == line).count()
}

/// Asserts that the process loaded the fake, not a driver installed on this machine.
fn assert_fake_loaded() {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("reads /proc/self/maps");
    assert!(maps.lines().any(|l| l.contains("/fake-cuda/") && l.ends_with("/libcuda.so")), "{maps}");
}

fn open(ordinal: usize) -> Device<Cuda> {
    let device = Device::<Cuda>::open(ordinal).unwrap_or_else(|e| panic!("fake device {ordinal}: {e}"));
    assert_fake_loaded();
    device
}

/// A checked bundle holding `image` as its CUDA image.
fn bundle(name: &str, image: &str) -> KernelBundle {
    let bytes = KernelBundle::encode(true, &[(BackendKind::Cuda, Variant::Default, image.as_bytes().to_vec())]);
    KernelBundle::parse(name, Box::leak(bytes.into_boxed_slice())).expect("a well-formed bundle")
}

#[track_caller]
fn assert_driver_error<T>(result: Result<T>, call: &str, code: i64, name: &str) {
    match result {
        Err(Error::Driver { backend, call: failed, code: got, name: text }) => {
            assert_eq!((backend, failed, got, text.as_str()), (BackendKind::Cuda, call, code, name))
        }
        Err(e) => panic!("expected `{call}` to fail with code {code}, got: {e}"),
        Ok(_) => panic!("expected `{call}` to fail with code {code}, it succeeded"),
    }
}

/// The bytes a kernel parameter of `arg`'s C type holds.
fn c_bytes(arg: KernelArg) -> Vec<u8> {
    match arg {
        KernelArg::Ptr(v) | KernelArg::U64(v) => v.to_ne_bytes().to_vec(),
        KernelArg::I64(v) => v.to_ne_bytes().to_vec(),
        KernelArg::F64(v) => v.to_ne_bytes().to_vec(),
        KernelArg::U32(v) => v.to_ne_bytes().to_vec(),
        KernelArg::I32(v) => v.to_ne_bytes().to_vec(),
        KernelArg::F32(v) => v.to_ne_bytes().to_vec(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn lists_devices_and_their_attributes() {
    if !in_child() {
        assert_all_released(&run_child("lists_devices_and_their_attributes", &FULL, &[]));
        return;
    }
    assert_eq!(Device::<Cuda>::count().expect("counts devices"), 2);
    let h200 = open(0);
    let info = h200.info();
    assert_eq!(
        (info.backend, info.ordinal, info.name.as_str(), info.arch.as_str()),
        (BackendKind::Cuda, 0, "Fake NVIDIA H200", "sm_90")
    );
    assert_eq!(
        (info.wave_size, info.multiprocessors, info.max_cooperative_blocks),
        (32, 132, 132),
        "one resident block per SM is promised for cooperative launches"
    );
    assert_eq!((info.max_threads_per_block, info.max_dynamic_shared_bytes), (1024, 232448));
    assert_eq!(h200.raw().ordinal(), 0);
    let a30 = open(1);
    let info = a30.info();
    assert_eq!((info.ordinal, info.name.as_str(), info.arch.as_str()), (1, "Fake NVIDIA A30", "sm_80"));
    assert_eq!((info.multiprocessors, info.max_cooperative_blocks), (56, 0), "no cooperative launch on this one");
    assert_eq!(info.max_dynamic_shared_bytes, 166912);
    match Device::<Cuda>::open(2) {
        Err(e @ Error::NoDevice { backend: BackendKind::Cuda, ordinal: 2, found: 2, .. }) => {
            assert!(e.to_string().contains("valid ordinals are 0..2"), "{e}")
        }
        Err(e) => panic!("expected NoDevice, got {e}"),
        Ok(_) => panic!("opened a third device of two"),
    }
    // A second handle retains the same primary context; all are released (the parent checks).
    let again = open(0);
    assert_eq!(again.info(), h200.info());
    assert_eq!(logged_exactly("cuInit"), 1, "the driver is initialized once");
}

#[test]
fn copies_round_trip_bytes() {
    if !in_child() {
        assert_all_released(&run_child("copies_round_trip_bytes", &FULL, &[]));
        return;
    }
    let device = open(0);
    // The fake hands out memory filled with 0xab: the backend zeroes it.
    assert_eq!(device.alloc::<u32>(100).expect("alloc").download().expect("download"), vec![0; 100]);
    let mut words = device.upload(&[1u32, 2, 3, 4, 5]).expect("upload");
    words.write_at(1, &[20, 30]).expect("write_at");
    assert_eq!(words.download().expect("download"), [1, 20, 30, 4, 5]);
    let mut tail = [0u32; 2];
    words.read_at(3, &mut tail).expect("read_at");
    assert_eq!(tail, [4, 5]);
    let doubles = [0.5f64, -1.0, f64::MAX, f64::MIN_POSITIVE];
    assert_eq!(device.upload(&doubles).expect("upload").download().expect("download"), doubles);
    assert_eq!(logged_exactly("cuMemAlloc_v2 device 0 bytes 20"), 1, "{}", log());

    // The backend's own range checks, below the typed buffers.
    let raw = device.raw();
    let mut memory = Cuda::alloc(raw, 20).expect("alloc");
    assert_eq!(Cuda::address(&memory) % 256, 0);
    Cuda::write(raw, &mut memory, 17, &[1, 2, 3]).expect("write at the end");
    let mut last = [9u8; 4];
    Cuda::read(raw, &memory, 16, &mut last).expect("read at the end");
    assert_eq!(last, [0, 1, 2, 3]);
    assert!(matches!(Cuda::write(raw, &mut memory, 18, &[0; 3]), Err(Error::InvalidArgument { .. })));
    assert!(matches!(Cuda::read(raw, &memory, usize::MAX, &mut last), Err(Error::InvalidArgument { .. })));
    let raw_stream = Cuda::create_stream(raw).expect("stream");
    let mut dst = Cuda::alloc(raw, 8).expect("alloc");
    Cuda::copy_device(raw, &raw_stream, &mut dst, 2, &memory, 16, 4).expect("copy");
    Cuda::synchronize(raw, &raw_stream).expect("synchronize");
    let mut copied = [9u8; 8];
    Cuda::read(raw, &dst, 0, &mut copied).expect("read");
    assert_eq!(copied, [0, 0, 0, 1, 2, 3, 0, 0]);
    assert!(matches!(
        Cuda::copy_device(raw, &raw_stream, &mut dst, 6, &memory, 0, 4),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Cuda::copy_device(raw, &raw_stream, &mut dst, 0, &memory, 17, 4),
        Err(Error::InvalidArgument { .. })
    ));

    // Stream copies, and their order: a blocking copy waits for the stream's earlier work (the
    // backend's streams synchronize with the legacy default stream).
    let stream = device.stream().expect("stream");
    let values: Vec<u32> = (0..1000).map(|i| i * 7).collect();
    let src = device.upload(&values).expect("upload");
    let mut dst = device.alloc::<u32>(1000).expect("alloc");
    let mut late = device.alloc::<u32>(1000).expect("alloc");
    stream.copy(&mut dst, &src).expect("copy");
    stream.synchronize().expect("synchronize");
    assert_eq!(dst.download().expect("download"), values);
    let spin = device.load(&bundle("fake", KERNELS)).expect("load").kernel("spin").expect("spin");
    let started = Instant::now();
    // SAFETY: spin(u64 ns).
    unsafe { stream.launch(&spin, &LaunchConfig::new(1, 1), &[100_000_000u64.into()]) }.expect("launch");
    stream.copy(&mut late, &src).expect("copy");
    assert_eq!(late.download().expect("download"), values, "the download waited for the stream");
    assert!(started.elapsed() >= Duration::from_millis(100), "{:?}", started.elapsed());
    stream.synchronize().expect("synchronize");
    assert!(matches!(
        stream.copy(&mut device.alloc::<u32>(999).expect("alloc"), &src),
        Err(Error::InvalidArgument { .. })
    ));

    match device.alloc::<u8>(2 << 30) {
        Err(Error::OutOfMemory { backend: BackendKind::Cuda, requested }) => assert_eq!(requested, 2 << 30),
        Err(e) => panic!("expected OutOfMemory, got {e}"),
        Ok(_) => panic!("the fake device has 1 GiB"),
    }

    // Other threads (each binds the context before its calls), and the other device.
    std::thread::scope(|s| {
        s.spawn(|| assert_eq!(words.download().expect("download on another thread"), [1, 20, 30, 4, 5]));
        s.spawn(|| {
            let other = open(1);
            let buffer = other.upload(&[7u64, 8, 9]).expect("upload to device 1");
            assert_eq!(buffer.download().expect("download from device 1"), [7, 8, 9]);
        });
    });
    assert_eq!(logged_exactly("cuMemAlloc_v2 device 1 bytes 24"), 1, "{}", log());
}

#[test]
fn launches_marshal_typed_arguments() {
    if !in_child() {
        assert_all_released(&run_child("launches_marshal_typed_arguments", &FULL, &[]));
        return;
    }
    let device = open(0);
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    assert!(module.checked());
    let echo = module.kernel("echo").expect("echo");
    let stream = device.stream().expect("stream");
    let out = device.alloc::<u64>(10).expect("alloc");
    let args = [
        out.arg(),
        KernelArg::U32(0xdead_beef),
        KernelArg::F32(-1.25),
        KernelArg::U64(0x0123_4567_89ab_cdef),
        KernelArg::F64(3.5),
        KernelArg::I32(-7),
        KernelArg::I64(-2),
    ];
    // SAFETY: echo(u64*, unsigned, float, u64, double, int, long long) takes `args`; `out`
    // outlives the synchronizes. The same holds for every launch of echo below.
    unsafe { stream.launch(&echo, &LaunchConfig::new((2, 3, 4), (8, 4, 2)).shared(1000), &args) }.expect("launch");
    stream.synchronize().expect("synchronize");
    // Each argument arrives as exactly its C type's bytes: the int -7 is 4 bytes, not 8.
    let words = out.download().expect("download");
    let expected = [
        0xdead_beef,
        u64::from((-1.25f32).to_bits()),
        0x0123_4567_89ab_cdef,
        3.5f64.to_bits(),
        0xffff_fff9,
        (-2i64) as u64,
        24,
        64,
        1000,
        0,
    ];
    assert_eq!(words, expected);
    let params: Vec<String> = args.iter().map(|a| hex(&c_bytes(*a))).collect();
    let line = format!("cuLaunchKernel echo grid 2,3,4 block 8,4,2 shared 1000 params {}", params.join(" "));
    assert_eq!(logged("cuLaunch"), [line]);

    // Dynamic shared memory is opted into once per larger size, and never lowered: the
    // limit belongs to the driver's function, which every Kernel of the name shares.
    let launch_shared = |kernel: &xbarrier_api::Kernel<Cuda>, bytes: u32| {
        // SAFETY: as above.
        unsafe { stream.launch(kernel, &LaunchConfig::new(1, 32).shared(bytes), &args) }
            .and_then(|()| stream.synchronize())
            .and_then(|()| out.download())
            .map(|words| words[8])
    };
    assert_eq!(launch_shared(&echo, 64 * 1024).expect("64 KiB"), 65536);
    assert_eq!(launch_shared(&echo, 64 * 1024).expect("64 KiB again"), 65536);
    assert_eq!(launch_shared(&echo, 1000).expect("less"), 1000);
    let same = module.kernel("echo").expect("echo again");
    assert_eq!(launch_shared(&same, 2000).expect("2000 bytes through another Kernel"), 2000);
    assert_eq!(launch_shared(&echo, 64 * 1024).expect("64 KiB after the other Kernel's launch"), 65536);
    let sets = logged("cuFuncSetAttribute echo MAX_DYNAMIC_SHARED_SIZE_BYTES ");
    assert_eq!(sets.first().map(String::as_str), Some("cuFuncSetAttribute echo MAX_DYNAMIC_SHARED_SIZE_BYTES 1000"));
    assert_eq!(sets.last().map(String::as_str), Some("cuFuncSetAttribute echo MAX_DYNAMIC_SHARED_SIZE_BYTES 65536"));
    assert_eq!(sets.len(), 2, "{sets:?}");
    // What the device allows in all, less the kernel's static shared memory, passes validation
    // but not the driver, which says so.
    assert_driver_error(
        launch_shared(&echo, 232448),
        "cuFuncSetAttribute",
        1,
        "CUDA_ERROR_INVALID_VALUE: invalid argument",
    );
    assert_eq!(launch_shared(&echo, 64 * 1024).expect("64 KiB after the refusal"), 65536);
    assert!(matches!(launch_shared(&echo, 232449), Err(Error::InvalidArgument { call: "launch", .. })));

    // Cooperative launches: up to the device's promise; past it, or on a device without them,
    // refused before the driver sees them.
    let launches = logged("cuLaunch").len();
    // SAFETY: as above.
    unsafe { stream.launch(&echo, &LaunchConfig::new(132, 64).cooperative(), &args) }.expect("cooperative");
    stream.synchronize().expect("synchronize");
    assert_eq!(&out.download().expect("download")[6..], [132, 64, 0, 1]);
    assert_eq!(
        logged("cuLaunchCooperativeKernel echo grid 132,1,1 block 64,1,1 shared 0 params ").len(),
        1,
        "{}",
        log()
    );
    // SAFETY: as above (refused before it runs).
    let refused = unsafe { stream.launch(&echo, &LaunchConfig::new(133, 64).cooperative(), &args) };
    assert!(matches!(refused, Err(Error::InvalidArgument { call: "launch", .. })), "{refused:?}");
    let other = open(1);
    let other_stream = other.stream().expect("stream on device 1");
    // SAFETY: as above (refused before it runs).
    let refused = unsafe { other_stream.launch(&echo, &LaunchConfig::new(1, 64).cooperative(), &args) };
    assert!(matches!(refused, Err(Error::InvalidArgument { call: "launch", .. })), "{refused:?}");
    assert_eq!(logged("cuLaunch").len(), launches + 1);
    // A kernel of device 0 on a stream of device 1: refused before the driver sees it.
    // SAFETY: as above (refused before it runs).
    match unsafe { other_stream.launch(&echo, &LaunchConfig::new(1, 1), &args) } {
        Err(Error::DeviceMismatch { found: 0, stream: 1, .. }) => {}
        other => panic!("expected a device mismatch, got {other:?}"),
    }
    assert_eq!(logged("cuLaunch").len(), launches + 1);
    other_stream.synchronize().expect("nothing was queued");

    // Typed buffers through a kernel that uses the grid: add(float*, unsigned n, float).
    let add = module.kernel("add").expect("add");
    let data = device.upload(&(0..1000).map(|i| i as f32).collect::<Vec<f32>>()).expect("upload");
    // SAFETY: add(float*, unsigned, float); `data` outlives the synchronize.
    unsafe { stream.launch(&add, &LaunchConfig::new(4, 256), &[data.arg(), 1000u32.into(), 0.5f32.into()]) }
        .expect("launch");
    // SAFETY: as above; 100 threads touch the first 100 elements.
    unsafe { stream.launch(&add, &LaunchConfig::new(1, 100), &[data.arg(), 1000u32.into(), 1.0f32.into()]) }
        .expect("launch");
    // Launched on this thread, synchronized on another.
    std::thread::scope(|s| s.spawn(|| stream.synchronize().expect("synchronize on another thread")).join())
        .expect("the thread ran");
    let sums = data.download().expect("download");
    assert!(
        sums.iter().enumerate().all(|(i, &v)| v == i as f32 + if i < 100 { 1.5 } else { 0.5 }),
        "{:?}",
        &sums[95..105]
    );

    // Names and images the driver refuses.
    for name in ["nope", "ec\0ho"] {
        match module.kernel(name) {
            Err(Error::KernelNotFound { module, kernel }) => {
                assert_eq!((module.as_str(), kernel.as_str()), ("fake", name))
            }
            Err(e) => panic!("expected KernelNotFound, got {e}"),
            Ok(_) => panic!("found kernel {name:?}"),
        }
    }
    let junk = device.load(&bundle("junk", "not a module")).map(drop);
    assert_driver_error(junk, "cuModuleLoadData", 200, "CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid");
    match device.load(&bundle("small", "FAKECUDA kernel:fault global:xb_fault_record_slot:80")) {
        Err(Error::BadBundle(text)) => {
            assert!(text.contains("xb_fault_record_slot is 80 bytes, xb_fault_record is 88"), "{text}")
        }
        Err(e) => panic!("expected BadBundle, got {e}"),
        Ok(_) => panic!("loaded a module whose fault record has the wrong size"),
    }
}

#[test]
fn fault_records_surface_as_faults() {
    if !in_child() {
        assert_all_released(&run_child("fault_records_surface_as_faults", &FULL, &[]));
        return;
    }
    let device = open(0);
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let fault = module.kernel("fault").expect("fault");
    let stream = device.stream().expect("stream");
    let launch = |kernel: &xbarrier_api::Kernel<Cuda>, config: LaunchConfig, kind: u32| {
        // SAFETY: fault(unsigned kind).
        unsafe { stream.launch(kernel, &config, &[kind.into()]) }.expect("launch");
    };
    // The last thread of the last block records the fault.
    launch(&fault, LaunchConfig::new((2, 1, 3), (32, 2, 1)), 3);
    match stream.synchronize() {
        Err(Error::Fault(f)) => {
            assert_eq!((f.kernel.as_str(), f.kind, f.op), ("fault", FaultKind::OverArrival, BarrierOp::ArriveTx));
            let record = FaultRecord {
                kind: 3,
                op: 4,
                block: [1, 0, 2],
                thread: [31, 1, 0],
                barrier: 0x10,
                value: -5,
                limit: (1 << 20) - 1,
                pending: 2,
                tx: -3,
                expected: 7,
                phase_parity: 1,
                scope: 2,
            };
            assert_eq!(f.record, record);
            let text = f.to_string();
            assert!(text.contains("`fault`") && text.contains("block (1,0,2) thread (31,1,0)"), "{text}");
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    stream.synchronize().expect("a fault is reported once");

    // A record with `op` claimed but no `kind` is no fault, yet it is cleared: otherwise the
    // next fault could not claim it (the first fault of a launch wins).
    launch(&fault, LaunchConfig::new(1, 1), 0);
    stream.synchronize().expect("kind 0 is no fault");
    launch(&fault, LaunchConfig::new(1, 1), 9);
    match stream.synchronize() {
        Err(Error::Fault(f)) => assert_eq!((f.kind, f.record.thread), (FaultKind::WaitTimeout, [0, 0, 0])),
        other => panic!("expected the deadlock fault, got {other:?}"),
    }
    launch(&fault, LaunchConfig::new(1, 1), 99);
    match stream.synchronize() {
        Err(Error::Fault(f)) => assert_eq!(f.kind, FaultKind::Unknown(99)),
        other => panic!("expected a fault of an unknown kind, got {other:?}"),
    }

    // A fault names the kernel launched last from its module, whatever ran after it from others.
    let other = device.load(&bundle("other", KERNELS)).expect("load");
    let echo = other.kernel("echo").expect("echo");
    let out = device.alloc::<u64>(10).expect("alloc");
    launch(&fault, LaunchConfig::new(1, 1), 1);
    // SAFETY: echo(u64*, unsigned, float, u64, double, int, long long); `out` outlives the synchronize.
    unsafe {
        stream.launch(
            &echo,
            &LaunchConfig::new(1, 1),
            &[out.arg(), 0u32.into(), 0f32.into(), 0u64.into(), 0f64.into(), 0i32.into(), 0i64.into()],
        )
    }
    .expect("launch");
    match stream.synchronize() {
        Err(Error::Fault(f)) => assert_eq!((f.kernel.as_str(), f.kind), ("fault", FaultKind::InitCount)),
        other => panic!("expected a fault, got {other:?}"),
    }

    // A module without the global has nowhere to record a fault, and reports none.
    let plain = device.load(&bundle("plain", "FAKECUDA kernel:fault")).expect("load");
    launch(&plain.kernel("fault").expect("fault"), LaunchConfig::new(1, 1), 3);
    stream.synchronize().expect("no record, no fault");
}

/// The stream times a launch with a limit by two events and reports an overrun once the
/// kernel has ended (a GPU kernel cannot be aborted); the stream stays usable.
#[test]
fn time_limits_are_reported_after_the_kernel() {
    if !in_child() {
        let log = run_child("time_limits_are_reported_after_the_kernel", &FULL, &[]);
        assert_all_released(&log);
        assert!(log.lines().any(|l| l == "cuEventElapsedTime_v2"), "{log}");
        assert!(!log.lines().any(|l| l == "cuEventElapsedTime"), "{log}");
        // A driver before 12.8 has only the original entry point, which the backend then uses.
        let log = run_child("time_limits_are_reported_after_the_kernel", &NO_ELAPSED_V2, &[]);
        assert_all_released(&log);
        assert!(log.lines().any(|l| l == "cuEventElapsedTime"), "{log}");
        return;
    }
    let device = open(0);
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let spin = module.kernel("spin").expect("spin");
    let stream = device.stream().expect("stream");
    let spin_for = |ns: u64, limit: Option<Duration>| {
        let mut config = LaunchConfig::new(1, 1);
        config.timeout = limit;
        // SAFETY: spin(u64 ns).
        unsafe { stream.launch(&spin, &config, &[ns.into()]) }
    };
    let started = Instant::now();
    spin_for(250_000_000, Some(Duration::from_millis(20))).expect("launch");
    assert!(started.elapsed() < Duration::from_millis(200), "the launch waited for the kernel");
    match stream.synchronize() {
        Err(Error::LaunchTimeout { kernel, seconds }) => {
            assert_eq!(kernel, "spin");
            assert!((seconds - 0.02).abs() < 1e-9, "{seconds}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_millis(250), "reported before the kernel ended");
    stream.synchronize().expect("an overrun is reported once");
    spin_for(2_000_000, Some(Duration::from_secs(1))).expect("launch");
    spin_for(50_000_000, None).expect("launch");
    stream.synchronize().expect("within its limit, and one without a limit");
    // Only the launch that overran is named, after those within their limits.
    spin_for(1_000_000, Some(Duration::from_secs(1))).expect("launch");
    spin_for(60_000_000, Some(Duration::from_millis(10))).expect("launch");
    assert!(matches!(stream.synchronize(), Err(Error::LaunchTimeout { seconds, .. }) if (seconds - 0.01).abs() < 1e-9));

    // The stream and its events still work: elapsed_until waits for the later event.
    let start = stream.record().expect("record");
    spin_for(30_000_000, None).expect("launch");
    let end = stream.record().expect("record");
    let took = start.elapsed_until(&end).expect("elapsed");
    assert!(took >= Duration::from_millis(29) && took < Duration::from_secs(5), "{took:?}");
    stream.synchronize().expect("synchronize");
}

/// A kernel that never ends cannot be stopped by the stream's time limit (the backend waits in
/// cuStreamSynchronize); where the driver's watchdog ends it, the wait returns the driver's
/// error, and the context, lost, says so to every later call.
#[test]
fn a_hung_kernel_ends_in_the_watchdogs_driver_error() {
    if !in_child() {
        let log = run_child(
            "a_hung_kernel_ends_in_the_watchdogs_driver_error",
            &FULL,
            &[("XBAR_FAKE_CUDA_WATCHDOG_MS", "300")],
        );
        assert!(log.lines().any(|l| l == "watchdog ended hang"), "{log}");
        assert_all_released(&log);
        return;
    }
    let device = open(0);
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let hang = module.kernel("hang").expect("hang");
    let stream = device.stream().expect("stream");
    let data = device.upload(&[1u32, 2, 3]).expect("upload");
    let started = Instant::now();
    let config = LaunchConfig::new(1, 32).timeout(Duration::from_millis(20));
    // SAFETY: hang() takes no arguments.
    unsafe { stream.launch(&hang, &config, &[]) }.expect("launch");
    let lost = "CUDA_ERROR_LAUNCH_TIMEOUT: the launch timed out and was terminated";
    assert_driver_error(stream.synchronize(), "cuStreamSynchronize", 702, lost);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(30), "{waited:?}");
    assert_driver_error(stream.synchronize(), "cuStreamSynchronize", 702, lost);
    assert_driver_error(data.download(), "cuMemcpyDtoH", 702, lost);
    assert_driver_error(device.alloc::<u8>(1), "cuMemAlloc", 702, lost);
    // SAFETY: as above.
    assert_driver_error(unsafe { stream.launch(&hang, &config, &[]) }, "cuEventCreate", 702, lost);
    // SAFETY: as above.
    assert_driver_error(unsafe { stream.launch(&hang, &LaunchConfig::new(1, 1), &[]) }, "cuLaunchKernel", 702, lost);
    // The other device is untouched.
    assert_eq!(open(1).upload(&[5u8]).expect("upload").download().expect("download"), [5]);
}

#[test]
fn an_illegal_address_is_a_sticky_driver_error() {
    if !in_child() {
        assert_all_released(&run_child("an_illegal_address_is_a_sticky_driver_error", &FULL, &[]));
        return;
    }
    let device = open(0);
    let echo = device.load(&bundle("fake", KERNELS)).expect("load").kernel("echo").expect("echo");
    let stream = device.stream().expect("stream");
    let data = device.upload(&[1u32, 2, 3]).expect("upload");
    let args = [KernelArg::Ptr(0x1000), 0u32.into(), 0f32.into(), 0u64.into(), 0f64.into(), 0i32.into(), 0i64.into()];
    // SAFETY: the arguments match echo's parameters; the pointer is bad on purpose, which the
    // device reports (the fake's device memory is checked host memory).
    unsafe { stream.launch(&echo, &LaunchConfig::new(1, 1), &args) }.expect("the launch is queued");
    let illegal = "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered";
    assert_driver_error(stream.synchronize(), "cuStreamSynchronize", 700, illegal);
    assert_driver_error(data.download(), "cuMemcpyDtoH", 700, illegal);
    assert_driver_error(device.stream().map(drop), "cuStreamCreate", 700, illegal);
}

/// cuInit's failures: no device is no error (a count of 0, and NoDevice saying how to check);
/// anything else is cuInit's driver error, from counting and opening alike.
#[test]
fn init_failures_map_to_documented_errors() {
    const NAME: &str = "init_failures_map_to_documented_errors";
    if !in_child() {
        for settings in [
            [("XBAR_FAKE_CUDA_INIT", "no-device")],
            [("XBAR_FAKE_CUDA_DEVICES", "0")],
            [("XBAR_FAKE_CUDA_INIT", "error:34")],
            [("XBAR_FAKE_CUDA_INIT", "error:803")],
        ] {
            run_child(NAME, &FULL, &settings);
        }
        return;
    }
    let failure = match std::env::var("XBAR_FAKE_CUDA_INIT").as_deref() {
        Ok("error:34") => Some((34, "CUDA_ERROR_STUB_LIBRARY: CUDA driver is a stub library")),
        Ok("error:803") => Some((
            803,
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
        )),
        _ => None,
    };
    match failure {
        None => {
            assert_eq!(Device::<Cuda>::count().expect("no device is no error"), 0);
            match Device::<Cuda>::open(0) {
                Err(e @ Error::NoDevice { ordinal: 0, found: 0, .. }) => {
                    assert!(e.to_string().contains("nvidia-smi"), "{e}")
                }
                Err(e) => panic!("expected NoDevice, got {e}"),
                Ok(_) => panic!("opened a device the driver does not have"),
            }
        }
        Some((code, name)) => {
            assert_driver_error(Device::<Cuda>::count(), "cuInit", code, name);
            assert_driver_error(Device::<Cuda>::open(0), "cuInit", code, name);
            assert_eq!(logged_exactly("cuInit"), 1, "the probe's outcome is kept");
        }
    }
    assert_fake_loaded();
}

#[test]
fn missing_symbols_are_named_with_the_fix() {
    if !in_child() {
        let log = run_child("missing_symbols_are_named_with_the_fix", &MISSING, &[]);
        assert!(!log.contains("cuInit"), "a driver lacking entry points is not initialized:\n{log}");
        return;
    }
    for result in [Device::<Cuda>::count().map(drop), Device::<Cuda>::open(0).map(drop)] {
        match result {
            Err(e @ Error::Unsupported { backend: BackendKind::Cuda, what: "the installed NVIDIA driver", .. }) => {
                let text = e.to_string();
                assert!(text.contains("libcuda lacks cuFuncSetAttribute, cuLaunchCooperativeKernel;"), "{text}");
                assert!(text.contains("update the NVIDIA driver"), "{text}");
            }
            Err(e) => panic!("expected the missing entry points, got {e}"),
            Ok(()) => panic!("used a driver that lacks entry points"),
        }
    }
    assert_fake_loaded();
}

/// A launch mixing devices is refused before the driver sees it: a kernel loaded on
/// another device than the stream's (untyped and typed launches), or a buffer of another
/// device among a typed launch's arguments. A typed launch's `Launch` waits for the stream
/// when dropped, and leaves the launch's fault to the next synchronize; `wait` reports it.
#[test]
fn typed_launches_check_devices_and_wait_when_dropped() {
    if !in_child() {
        assert_all_released(&run_child("typed_launches_check_devices_and_wait_when_dropped", &FULL, &[]));
        return;
    }
    let (device, other) = (open(0), open(1));
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let foreign = other.load(&bundle("fake", KERNELS)).expect("load on device 1");
    let stream = device.stream().expect("stream");
    let data = device.upload(&[1.0f32; 64]).expect("upload");
    let elsewhere = other.upload(&[1.0f32; 64]).expect("upload to device 1");
    let add = module.kernel("add").expect("add");
    let config = LaunchConfig::new(1, 64);

    let foreign_add = foreign.kernel("add").expect("add on device 1");
    assert_eq!((add.device_ordinal(), foreign_add.device_ordinal(), elsewhere.device_ordinal()), (0, 1, 1));
    // SAFETY: add(float* data, u32 n, f32 f); `data` outlives the launch (which is refused).
    let refused = unsafe { stream.launch(&foreign_add, &config, &[data.arg(), 64u32.into(), 1.0f32.into()]) };
    match refused {
        Err(Error::DeviceMismatch { kernel, what, found: 1, stream: 0 }) => {
            assert_eq!((kernel.as_str(), what.as_str()), ("add", "the kernel"))
        }
        other => panic!("expected a device mismatch, got {other:?}"),
    }
    let args = [LaunchArg::buffer(&elsewhere), LaunchArg::from(64u32), LaunchArg::from(1.0f32)];
    // SAFETY: as above; the launch is refused before anything runs.
    match unsafe { Launch::start(&stream, &add, &config, &args) } {
        Err(Error::DeviceMismatch { what, found: 1, stream: 0, .. }) => assert_eq!(what, "argument 1 (a buffer)"),
        Err(e) => panic!("expected a device mismatch, got {e}"),
        Ok(_) => panic!("a buffer of device 1 was launched on device 0"),
    }
    assert!(logged("cuLaunch").is_empty(), "{}", log());
    let mut here = device.alloc::<f32>(64).expect("alloc");
    match stream.copy(&mut here, &elsewhere) {
        Err(Error::DeviceMismatch { what, found: 1, stream: 0, .. }) => assert_eq!(what, "the source"),
        other => panic!("expected a device mismatch, got {other:?}"),
    }

    // Dropped without wait(): the drop waits for the stream (the spin takes 100 ms).
    let spin = module.kernel("spin").expect("spin");
    let started = Instant::now();
    // SAFETY: spin(u64 ns) takes one u64.
    drop(unsafe { Launch::start(&stream, &spin, &LaunchConfig::new(1, 1), &[LaunchArg::from(100_000_000u64)]) });
    assert!(started.elapsed() >= Duration::from_millis(100), "the drop returned after {:?}", started.elapsed());
    // A fault of a dropped launch is reported by the next synchronize; wait() reports its own.
    let fault = module.kernel("fault").expect("fault");
    // SAFETY: fault(unsigned kind) takes one u32.
    let launch = unsafe { Launch::start(&stream, &fault, &LaunchConfig::new(1, 1), &[LaunchArg::from(3u32)]) };
    drop(launch.expect("launch"));
    assert!(matches!(stream.synchronize(), Err(Error::Fault(f)) if f.kind == FaultKind::OverArrival));
    // SAFETY: as above.
    let launch = unsafe { Launch::start(&stream, &fault, &LaunchConfig::new(1, 1), &[LaunchArg::from(3u32)]) };
    assert!(matches!(launch.expect("launch").wait(), Err(Error::Fault(f)) if f.kind == FaultKind::OverArrival));
    stream.synchronize().expect("each fault is reported once");
}

/// The driver loads kernels lazily, and loading one may wait for all the context's work, so
/// a kernel launched while another waits for it could never start. Loading a module loads
/// all its kernels: a launch on a second stream does not wait for the first stream's work.
#[test]
fn kernels_are_loaded_with_their_module() {
    if !in_child() {
        assert_all_released(&run_child("kernels_are_loaded_with_their_module", &FULL, &[]));
        return;
    }
    let device = open(0);
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let loads = logged("cuFuncLoad");
    assert!(loads.iter().any(|l| l.ends_with(" add")) && loads.iter().any(|l| l.ends_with(" spin")), "{}", log());
    let (spin, add) = (module.kernel("spin").expect("spin"), module.kernel("add").expect("add"));
    let (first, second) = (device.stream().expect("stream"), device.stream().expect("stream"));
    let data = device.upload(&[1.0f32; 64]).expect("upload");
    // SAFETY: spin(u64 ns) takes one u64.
    unsafe { first.launch(&spin, &LaunchConfig::new(1, 1), &[200_000_000u64.into()]) }.expect("spin");
    let started = Instant::now();
    let args = [LaunchArg::buffer(&data), LaunchArg::from(64u32), LaunchArg::from(1.0f32)];
    // SAFETY: add(float* data, u32 n, f32 f) with n within `data`.
    let launch = unsafe { Launch::start(&second, &add, &LaunchConfig::new(1, 64), &args) }.expect("add");
    let waited = started.elapsed();
    assert!(waited < Duration::from_millis(100), "the add's launch waited {waited:?} for the spin");
    launch.wait().expect("add");
    first.synchronize().expect("spin");
    assert!(logged("lazy load").is_empty(), "{}", log());
}

/// Buffers remember the stream work that used them last, so that the end of a typed launch's
/// borrows (here `std::mem::forget` of its `Launch`) cannot let another stream's work overlap
/// it: a launch or a copy on another stream waits for that work first.
#[test]
fn another_streams_work_waits_for_a_buffers_last_use() {
    if !in_child() {
        assert_all_released(&run_child("another_streams_work_waits_for_a_buffers_last_use", &FULL, &[]));
        return;
    }
    let device = open(0);
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let (spin, add) = (module.kernel("spin").expect("spin"), module.kernel("add").expect("add"));
    let (first, second) = (device.stream().expect("stream"), device.stream().expect("stream"));
    let config = LaunchConfig::new(1, 64);
    let slow_add = |data: &xbarrier_api::Buffer<Cuda, f32>| {
        // SAFETY: spin(u64 ns) takes one u64.
        unsafe { first.launch(&spin, &LaunchConfig::new(1, 1), &[100_000_000u64.into()]) }.expect("spin");
        let args = [LaunchArg::buffer(data), LaunchArg::from(64u32), LaunchArg::from(1.0f32)];
        // SAFETY: add(float* data, u32 n, f32 f) with n within `data`.
        std::mem::forget(unsafe { Launch::start(&first, &add, &config, &args) }.expect("add"));
    };

    let data = device.upload(&[1.0f32; 64]).expect("upload");
    let started = Instant::now();
    slow_add(&data);
    let args = [LaunchArg::buffer(&data), LaunchArg::from(64u32), LaunchArg::from(1.0f32)];
    // SAFETY: as above.
    let launch = unsafe { Launch::start(&second, &add, &config, &args) }.expect("add on the second stream");
    // Timed before the wait: a synchronize reads the fault record with a synchronous copy,
    // which waits for every blocking stream anyway.
    assert!(started.elapsed() >= Duration::from_millis(100), "the second stream's add did not wait for the first's");
    launch.wait().expect("wait");
    assert_eq!(data.download().expect("download"), [3.0; 64]);

    let source = device.upload(&[1.0f32; 64]).expect("upload");
    let mut copy = device.alloc::<f32>(64).expect("alloc");
    let started = Instant::now();
    slow_add(&source);
    second.copy(&mut copy, &source).expect("copy on the second stream");
    second.synchronize().expect("synchronize");
    assert!(started.elapsed() >= Duration::from_millis(100), "the copy did not wait for the first stream's add");
    assert_eq!(copy.download().expect("download"), [2.0; 64]);
    first.synchronize().expect("synchronize");
}

/// Memory shared with host threads: pinned host memory where the link has native atomics,
/// managed memory where the device shares it concurrently, Unsupported naming both
/// properties where neither holds, or where the device would map pinned memory at another
/// address than the host's. Kernels see it at the host's address; the host reads and writes
/// it while they run; and a failed launch that used it is seen without a synchronize.
#[test]
fn memory_shared_with_host_threads_follows_the_device_properties() {
    const NAME: &str = "memory_shared_with_host_threads_follows_the_device_properties";
    if !in_child() {
        let settings: [&[(&str, &str)]; 3] = [
            &[("XBAR_FAKE_CUDA_HOST_ATOMICS", "0")],
            &[("XBAR_FAKE_CUDA_HOST_ATOMICS", "1")],
            &[("XBAR_FAKE_CUDA_HOST_ATOMICS", "1"), ("XBAR_FAKE_CUDA_PINNED_OFFSET", "4096")],
        ];
        for settings in settings {
            assert_all_released(&run_child(NAME, &FULL, settings));
        }
        return;
    }
    let host_atomics = std::env::var("XBAR_FAKE_CUDA_HOST_ATOMICS").as_deref() == Ok("1");
    let device = open(0);
    if std::env::var("XBAR_FAKE_CUDA_PINNED_OFFSET").is_ok() {
        // Kernels could not use the host's pointer: refused (and freed: the child's exit
        // line counts live allocations).
        match device.alloc_system::<u32>(4) {
            Err(Error::Unsupported { reason, .. }) => assert!(reason.contains("no unified addressing"), "{reason}"),
            Err(e) => panic!("expected Unsupported, got {e}"),
            Ok(_) => panic!("pinned memory at another device address was accepted"),
        }
        return;
    }
    let shared = device.alloc_system::<f32>(64).expect("alloc_system");
    let call = if host_atomics { "cuMemHostAlloc" } else { "cuMemAllocManaged" };
    assert_eq!(logged_exactly(&format!("{call} device 0 bytes 256")), 1, "{}", log());
    assert_eq!(shared.load(63).expect("load"), 0.0, "the backend zeroes it (the fake fills 0xab)");
    shared.store(5, 2.0).expect("store");
    let add = device.load(&bundle("fake", KERNELS)).expect("load").kernel("add").expect("add");
    let stream = device.stream().expect("stream");
    let args = [LaunchArg::system(&shared), 64u32.into(), 1.5f32.into()];
    // SAFETY: add(float* data, u32 n, f32 f); the memory holds 64 floats.
    unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 64), &args) }.expect("launch").wait().expect("wait");
    assert_eq!((shared.load(5).expect("load"), shared.load(63).expect("load")), (3.5, 1.5), "the kernel's writes");
    assert_eq!(shared.failed_use(), None);

    // A stream whose work with the memory is done, without failure, is not kept alive by
    // it: the next launch with the memory forgets that use, and dropping the stream
    // destroys it while the memory lives on.
    let other = device.stream().expect("stream");
    // SAFETY: as above.
    unsafe { Launch::start(&other, &add, &LaunchConfig::new(1, 64), &args) }.expect("launch").wait().expect("wait");
    other.synchronize().expect("synchronize");
    // SAFETY: as above.
    unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 64), &args) }.expect("launch").wait().expect("wait");
    let destroyed = logged_exactly("cuStreamDestroy");
    drop(other);
    assert_eq!(logged_exactly("cuStreamDestroy"), destroyed + 1, "{}", log());
    assert_eq!(shared.load(63).expect("load"), 4.5, "both launches added");

    match open(1).alloc_system::<u32>(4) {
        Err(Error::Unsupported { backend: BackendKind::Cuda, reason, .. }) => assert!(
            reason.contains("CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED")
                && reason.contains("CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS"),
            "{reason}"
        ),
        Err(e) => panic!("expected Unsupported naming the properties, got {e}"),
        Ok(_) => panic!("device 1 reports neither property"),
    }

    // A checked kernel's fault ends the kernel normally (its module's record says it):
    // failed_use() reads the record once the stream is idle, with nobody synchronizing, and
    // the stream's next synchronize still reports the fault.
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let fault = module.kernel("fault").expect("fault");
    let flag = device.alloc_system::<u32>(1).expect("alloc_system");
    // SAFETY: fault(unsigned kind); the extra argument is never read.
    let launch =
        unsafe { Launch::start(&stream, &fault, &LaunchConfig::new(1, 32), &[3u32.into(), LaunchArg::system(&flag)]) }
            .expect("launch");
    launch.detach();
    let failure = failure_within(&flag, "the checked kernel's fault");
    assert!(failure.contains("barrier fault in kernel `fault`"), "{failure}");
    assert!(matches!(stream.synchronize(), Err(Error::Fault(_))), "the fault is still the stream's to report");
    stream.synchronize().expect("reported once");
    assert_eq!(shared.failed_use(), None, "a fault of later work is not the earlier work's");

    // A launch that writes past the memory breaks the context when it runs: failed_use()
    // sees that through the stream's query, with nobody synchronizing.
    let small = device.alloc_system::<f32>(4).expect("alloc_system");
    let args = [LaunchArg::system(&small), 1024u32.into(), 1.0f32.into()];
    // SAFETY: add(float* data, u32 n, f32 f); n past the memory is the failure wanted.
    let launch = unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 1024), &args) }.expect("launch");
    launch.detach();
    let failure = failure_within(&small, "the failed launch");
    assert!(failure.contains("cuStreamQuery") && failure.contains("ILLEGAL_ADDRESS"), "{failure}");
}

/// What `failed_use()` reports for `memory` once it reports anything, polled without
/// synchronizing for up to 5 s (`what`: the failure expected, for the message).
#[track_caller]
fn failure_within<T: DeviceCopy>(memory: &SystemBuffer<Cuda, T>, what: &str) -> String {
    let started = Instant::now();
    loop {
        if let Some(failure) = memory.failed_use() {
            return failure;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{what} went unseen");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A use of memory shared with host threads whose kernel failed is not forgotten: not when a
/// later launch on the same stream was waited for quietly (a dropped `Launch`, which moves
/// the stream's finished work past the failed one before anyone settled it), and not when
/// another stream uses the memory next.
#[test]
fn a_failed_use_of_shared_memory_stays_seen() {
    const NAME: &str = "a_failed_use_of_shared_memory_stays_seen";
    if !in_child() {
        assert_all_released(&run_child(NAME, &FULL, &[("XBAR_FAKE_CUDA_HOST_ATOMICS", "1")]));
        return;
    }
    let device = open(0);
    let module = device.load(&bundle("fake", KERNELS)).expect("load");
    let (fault, add) = (module.kernel("fault").expect("fault"), module.kernel("add").expect("add"));
    let stream = device.stream().expect("stream");
    let flag = device.alloc_system::<u32>(1).expect("alloc_system");
    let other = device.alloc_system::<f32>(4).expect("alloc_system");
    // SAFETY: fault(unsigned kind); the extra argument is never read.
    unsafe { Launch::start(&stream, &fault, &LaunchConfig::new(1, 32), &[3u32.into(), LaunchArg::system(&flag)]) }
        .expect("launch")
        .detach();
    let args = [LaunchArg::system(&other), 4u32.into(), 1.0f32.into()];
    // SAFETY: add(float* data, u32 n, f32 f); the memory holds 4 floats.
    drop(unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 4), &args) }.expect("launch"));
    // (Named after the module's last launch: one fault record per module.)
    let failure = flag.failed_use().expect("the checked kernel's fault is seen after a quiet wait");
    assert!(failure.contains("barrier fault in kernel"), "{failure}");
    // Another stream's launch with the same memory keeps the failed use.
    let next = device.stream().expect("stream");
    let args = [LaunchArg::system(&flag), 1u32.into(), 1.0f32.into()];
    // SAFETY: add(float* data, u32 n, f32 f); the memory holds one u32, read as one float.
    unsafe { Launch::start(&next, &add, &LaunchConfig::new(1, 1), &args) }.expect("launch").wait().expect("wait");
    assert!(flag.failed_use().is_some_and(|f| f.contains("barrier fault")), "{:?}", flag.failed_use());
    assert!(matches!(stream.synchronize(), Err(Error::Fault(_))), "the stream still reports it");
}

/// What the fake's `cuCtxEnablePeerAccess` answers when called directly, with device
/// `from`'s primary context current, for device `to`'s: the driver's own view of peer access,
/// below the backend. The child holds both devices open, so these retains neither create
/// nor destroy a context.
fn enable_directly(from: i32, to: i32) -> cudarc::driver::sys::CUresult {
    use cudarc::driver::{result::primary_ctx, sys};
    // SAFETY: both ordinals are devices of the fake; each retain is released before
    // returning, while the backend still holds the context, and the backend makes its own
    // context current before each of its calls.
    unsafe {
        let from_ctx = primary_ctx::retain(from).expect("retains the first context");
        let to_ctx = primary_ctx::retain(to).expect("retains the second context");
        sys::cuCtxSetCurrent(from_ctx).result().expect("cuCtxSetCurrent");
        let answer = sys::cuCtxEnablePeerAccess(to_ctx, 0);
        primary_ctx::release(to).expect("releases the second context");
        primary_ctx::release(from).expect("releases the first context");
        answer
    }
}

/// The peers' access lasts as long as the memory: a PeerBuffer keeps its peers' contexts, so
/// a peer closed and opened again (the same primary context, never reset) still reaches it.
#[test]
fn peer_memory_keeps_its_peers_contexts() {
    if !in_child() {
        assert_all_released(&run_child("peer_memory_keeps_its_peers_contexts", &FULL, &[]));
        return;
    }
    let device = open(0);
    let mut shared = {
        let other = open(1);
        device.alloc_peer::<f32>(64, &[&other]).expect("alloc_peer")
    };
    shared.write_at(0, &[1.0f32; 64]).expect("write_at");
    let other = open(1);
    let add = other.load(&bundle("fake", KERNELS)).expect("load on device 1").kernel("add").expect("add");
    let stream = other.stream().expect("stream on device 1");
    let args = [LaunchArg::peer(&shared), LaunchArg::from(64u32), LaunchArg::from(0.5f32)];
    // SAFETY: add(float* data, u32 n, f32 f); the memory holds 64 floats.
    unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 64), &args) }
        .expect("launch on device 1")
        .wait()
        .expect("device 1 reopened still reaches the memory");
    assert_eq!(shared.download().expect("download"), [1.5f32; 64]);
}

/// Memory of device 0 that kernels on device 1 use ([`Device::alloc_peer`]): device 1's
/// context enables peer access to device 0's once (a second allocation finds it enabled,
/// which is success), and a typed launch on device 1 takes the `PeerBuffer` and changes its
/// data. A plain buffer of device 0 is still refused there, and peer access goes one way:
/// device 0's kernels still cannot use device 1's memory.
#[test]
fn peer_memory_reaches_kernels_of_another_device() {
    if !in_child() {
        assert_all_released(&run_child("peer_memory_reaches_kernels_of_another_device", &FULL, &[]));
        return;
    }
    let (device, other) = (open(0), open(1));
    let mut shared = device.alloc_peer::<f32>(64, &[&other]).expect("alloc_peer");
    // Asked with device 1 as the one that accesses device 0's memory.
    assert_eq!(logged("cuDeviceCanAccessPeer"), ["cuDeviceCanAccessPeer 1 0: 1"]);
    assert_eq!(logged("cuDeviceGetP2PAttribute"), ["cuDeviceGetP2PAttribute 3 1 0: 1"], "NATIVE_ATOMIC_SUPPORTED");
    assert_eq!(logged("cuCtxEnablePeerAccess"), ["cuCtxEnablePeerAccess device 1 peer 0: 0"]);
    assert_eq!(logged_exactly("cuMemAlloc_v2 device 0 bytes 256"), 1, "{}", log());
    assert_eq!((shared.device_ordinal(), shared.devices()), (0, &[0, 1][..]));
    let values: Vec<f32> = (0..64).map(|i| i as f32).collect();
    shared.write_at(0, &values).expect("write_at");

    let module = other.load(&bundle("fake", KERNELS)).expect("load on device 1");
    let add = module.kernel("add").expect("add");
    let stream = other.stream().expect("stream on device 1");
    let config = LaunchConfig::new(1, 64);
    let args = [LaunchArg::peer(&shared), LaunchArg::from(64u32), LaunchArg::from(0.5f32)];
    // SAFETY: add(float* data, u32 n, f32 f); the memory holds 64 floats.
    unsafe { Launch::start(&stream, &add, &config, &args) }.expect("launch on device 1").wait().expect("wait");
    let expected: Vec<f32> = values.iter().map(|v| v + 0.5).collect();
    assert_eq!(shared.download().expect("download"), expected, "device 1's kernel wrote device 0's memory");

    // Enabled already: the driver says so, and the backend takes that as success.
    let mut again = device.alloc_peer::<u32>(4, &[&other]).expect("alloc_peer again");
    assert_eq!(
        logged("cuCtxEnablePeerAccess"),
        ["cuCtxEnablePeerAccess device 1 peer 0: 0", "cuCtxEnablePeerAccess device 1 peer 0: 704"]
    );
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
    assert_eq!(logged("cuLaunchKernel add").len(), 1, "{}", log());

    // One way only: device 0's context enabled no peer, so its kernel cannot use device 1's
    // memory (an untyped launch does not check the devices of pointers).
    let theirs = other.upload(&[1.0f32; 64]).expect("upload to device 1");
    let local_add = device.load(&bundle("fake", KERNELS)).expect("load").kernel("add").expect("add");
    let local = device.stream().expect("stream");
    // SAFETY: add(float* data, u32 n, f32 f); the pointer is device 1's on purpose, which the
    // fake reports (its device memory is checked host memory).
    unsafe { local.launch(&local_add, &config, &[theirs.arg(), 64u32.into(), 1.0f32.into()]) }.expect("queued");
    let illegal = "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered";
    assert_driver_error(local.synchronize(), "cuStreamSynchronize", 700, illegal);
    assert_eq!(theirs.download().expect("device 1 is untouched"), [1.0; 64]);
}

/// Where the devices cannot reach each other's memory, or reach it without native atomics,
/// `alloc_peer` is `Unsupported` naming what the driver reported, before it allocates
/// anything or enables peer access.
#[test]
fn peer_memory_needs_a_path_with_native_atomics() {
    const NAME: &str = "peer_memory_needs_a_path_with_native_atomics";
    if !in_child() {
        for link in ["no-atomics", "none"] {
            assert_all_released(&run_child(NAME, &FULL, &[("XBAR_FAKE_CUDA_P2P", link)]));
        }
        return;
    }
    use cudarc::driver::sys::CUresult;
    let link = std::env::var("XBAR_FAKE_CUDA_P2P").expect("the parent sets the link");
    let (device, other) = (open(0), open(1));
    let refused = |what: &str| match device.alloc_peer::<f32>(64, &[&other]) {
        Err(Error::Unsupported { backend: BackendKind::Cuda, what: "memory shared between devices", reason }) => {
            let named = if link == "none" {
                "cuDeviceCanAccessPeer reports no peer path"
            } else {
                "CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED is 0"
            };
            assert!(reason.contains(named), "{what}: {reason}");
        }
        Err(e) => panic!("{what}: expected Unsupported, got {e}"),
        Ok(_) => panic!("{what}: allocated peer memory over a link that is {link}"),
    };
    refused("alloc_peer");
    assert!(logged("cuCtxEnablePeerAccess").is_empty(), "{}", log());
    assert!(logged("cuMemAlloc").is_empty(), "nothing was allocated: {}", log());
    if link == "none" {
        assert!(logged("cuDeviceGetP2PAttribute").is_empty(), "no link to ask about: {}", log());
        assert_eq!(enable_directly(1, 0), CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    } else {
        // The driver enables access without atomics; the backend still refuses, because a
        // barrier across the devices needs them.
        assert_eq!(enable_directly(1, 0), CUresult::CUDA_SUCCESS);
        refused("alloc_peer after peer access was enabled");
    }
    assert!(logged("cuMemAlloc").is_empty(), "nothing was allocated: {}", log());
}

/// Without a peer path with native atomics, `alloc_peer` (device memory) is refused with a
/// hint, and `alloc_peer_in(SystemMemory)` places the memory where the system shares it with
/// every device: managed memory where both devices access managed memory concurrently with
/// the CPU, pinned host memory (mapped into every context) where both links to the CPU have
/// native atomics. Kernels on both devices use it. Where neither is possible the error
/// names what each device lacks.
#[test]
fn peer_memory_in_memory_the_system_shares() {
    const NAME: &str = "peer_memory_in_memory_the_system_shares";
    if !in_child() {
        for (link, shared) in [("no-atomics", "managed"), ("none", "pinned"), ("none", "neither")] {
            let settings = match shared {
                "managed" => vec![("XBAR_FAKE_CUDA_MANAGED", "both")],
                "pinned" => vec![("XBAR_FAKE_CUDA_HOST_ATOMICS", "2")],
                _ => vec![("XBAR_FAKE_CUDA_HOST_ATOMICS", "1")],
            };
            let settings: Vec<_> =
                [("XBAR_FAKE_CUDA_P2P", link), ("XBAR_EXPECT_SHARED", shared)].into_iter().chain(settings).collect();
            assert_all_released(&run_child(NAME, &FULL, &settings));
        }
        return;
    }
    let shared = std::env::var("XBAR_EXPECT_SHARED").expect("the parent says what the system shares");
    let (device, other) = (open(0), open(1));
    match device.alloc_peer::<f32>(64, &[&other]) {
        Err(Error::Unsupported { what: "memory shared between devices", reason, backend: BackendKind::Cuda }) => {
            assert!(reason.contains("PeerPlacement::SystemMemory needs no peer path"), "no hint: {reason}")
        }
        other => panic!("device memory needs a peer path with atomics: {:?}", other.map(|b| b.placement())),
    }
    if shared == "neither" {
        match device.alloc_peer_in::<f32>(PeerPlacement::SystemMemory, 64, &[&other]) {
            Err(Error::Unsupported {
                what: "system memory shared between devices",
                reason,
                backend: BackendKind::Cuda,
            }) => {
                let named = "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is missing on device 1 (Fake NVIDIA A30, \
                             sm_80), CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS on device 1 (Fake NVIDIA A30, sm_80);";
                assert!(reason.contains(named), "{named:?} not in: {reason}");
            }
            Err(e) => panic!("expected Unsupported, got {e}"),
            Ok(_) => panic!("device 1 has neither property, yet memory was placed"),
        }
        assert!(logged("cuMem").iter().all(|l| !l.contains("Alloc")), "nothing was allocated: {}", log());
        return;
    }
    let mut memory = device.alloc_peer_in::<f32>(PeerPlacement::SystemMemory, 64, &[&other]).expect("alloc_peer_in");
    assert_eq!((memory.placement(), memory.devices()), (PeerPlacement::SystemMemory, &[0, 1][..]));
    let call = if shared == "managed" { "cuMemAllocManaged device 0" } else { "cuMemHostAlloc device 0" };
    assert_eq!(logged(call).len(), 1, "{}", log());
    memory.write_at(0, &[1.0; 64]).expect("write_at");
    for (d, amount) in [(&other, 0.5f32), (&device, 2.0)] {
        let add = d.load(&bundle("fake", KERNELS)).expect("load").kernel("add").expect("add");
        let stream = d.stream().expect("stream");
        let args = [LaunchArg::peer(&memory), LaunchArg::from(64u32), LaunchArg::from(amount)];
        // SAFETY: add(float* data, u32 n, f32 f); the memory holds 64 floats.
        let launch = unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 64), &args) };
        launch.expect("launch").wait().expect("wait");
    }
    assert_eq!(memory.download().expect("download"), [3.5; 64], "both devices' kernels added");
}

/// A peer that is the device itself (its ordinal opened twice: one primary context) needs no
/// peer path and no driver call, even where the devices have none; kernels on either handle's
/// streams use the memory. The driver itself would refuse: a context is not its own peer.
#[test]
fn peer_memory_of_one_device_opened_twice_needs_no_peer_access() {
    const NAME: &str = "peer_memory_of_one_device_opened_twice_needs_no_peer_access";
    if !in_child() {
        assert_all_released(&run_child(NAME, &FULL, &[]));
        assert_all_released(&run_child(NAME, &FULL, &[("XBAR_FAKE_CUDA_P2P", "none")]));
        return;
    }
    let (device, again) = (open(0), open(0));
    let mut shared = device.alloc_peer::<f32>(64, &[&again]).expect("alloc_peer");
    assert_eq!(shared.devices(), [0]);
    for call in ["cuDeviceCanAccessPeer", "cuDeviceGetP2PAttribute", "cuCtxEnablePeerAccess"] {
        assert!(logged(call).is_empty(), "{call} was called: {}", log());
    }
    shared.write_at(0, &[2.0; 64]).expect("write_at");
    let add = again.load(&bundle("fake", KERNELS)).expect("load").kernel("add").expect("add");
    let stream = again.stream().expect("stream");
    let args = [LaunchArg::peer(&shared), LaunchArg::from(64u32), LaunchArg::from(1.0f32)];
    // SAFETY: add(float* data, u32 n, f32 f); the memory holds 64 floats.
    unsafe { Launch::start(&stream, &add, &LaunchConfig::new(1, 64), &args) }.expect("launch").wait().expect("wait");
    assert_eq!(shared.download().expect("download"), [3.0; 64]);
    assert_eq!(enable_directly(0, 0), cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_DEVICE);
}

/// Work enqueued on a stream after `Stream::wait_event` starts once the event's stream,
/// another device's, has reached the event: a launch on device 1 that waits for an event
/// recorded on device 0 behind a 300 ms `spin` and an `echo` ends no sooner than the spin and
/// sees what the echo wrote (into device 0's memory, which device 1 reaches as a peer). The
/// host does not wait in `wait_event`.
#[test]
fn a_stream_waits_for_an_event_of_another_device() {
    if !in_child() {
        let log = run_child("a_stream_waits_for_an_event_of_another_device", &FULL, &[]);
        assert_all_released(&log);
        assert!(log.lines().any(|l| l == "cuStreamWaitEvent device 1 waits for device 0"), "{log}");
        return;
    }
    let (device, other) = (open(0), open(1));
    let mut shared = device.alloc_peer::<f32>(20, &[&other]).expect("alloc_peer");
    let first = device.load(&bundle("fake", KERNELS)).expect("load on device 0");
    let second = other.load(&bundle("fake", KERNELS)).expect("load on device 1");
    let (spin, echo, add) = (first.kernel("spin"), first.kernel("echo"), second.kernel("add"));
    let (spin, echo, add) = (spin.expect("spin"), echo.expect("echo"), add.expect("add"));
    let (stream, waiting) = (device.stream().expect("stream on device 0"), other.stream().expect("on device 1"));
    let one = LaunchConfig::new(1, 1);
    let started = Instant::now();
    // SAFETY: spin(u64 ns).
    unsafe { stream.launch(&spin, &one, &[300_000_000u64.into()]) }.expect("spin");
    // echo(u64* out, u32, f32, u64, f64, i32, i64) writes its arguments into out[0..6] and the
    // launch's shape into out[6..10]: 80 bytes, 20 floats; floats 0..4 become 1.0, 0, 2.0, 0.
    let args = [
        shared.arg(),
        KernelArg::U32(1.0f32.to_bits()),
        KernelArg::F32(2.0),
        KernelArg::U64(0),
        KernelArg::F64(0.0),
        KernelArg::I32(0),
        KernelArg::I64(0),
    ];
    // SAFETY: echo takes `args`; `shared` holds 80 bytes and outlives the synchronizes.
    unsafe { stream.launch(&echo, &one, &args) }.expect("echo");
    let done = stream.record().expect("record");
    waiting.wait_event(&done).expect("wait_event");
    let enqueued = started.elapsed();
    assert!(enqueued < Duration::from_millis(150), "wait_event waited on the host: {enqueued:?}");
    // SAFETY: add(float* data, u32 n, f32 f): data[i] += f for i < 4; `shared` outlives the
    // synchronize.
    unsafe { waiting.launch(&add, &LaunchConfig::new(1, 4), &[shared.arg(), 4u32.into(), 0.5f32.into()]) }
        .expect("add on device 1");
    waiting.synchronize().expect("synchronize device 1");
    let ended = started.elapsed();
    assert!(ended >= Duration::from_millis(300), "device 1's launch ended before device 0's spin: {ended:?}");
    // Device 1's add ran on what device 0's echo wrote, not before it (which the echo would
    // then have overwritten: 1.0, 0, 2.0, 0).
    assert_eq!(shared.download().expect("download")[..4], [1.5, 0.5, 2.5, 0.5]);
    stream.synchronize().expect("synchronize device 0");
}
