//! The HIP backend end to end against a stand-in runtime (`fake_hip.c`), so that its
//! plumbing (library loading, attributes, copies, modules, argument marshalling, launches,
//! fault records, events, time limits, error mapping) runs where there is no AMD GPU.
//!
//! The test compiles `fake_hip.c` into a `libamdhip64.so` with the C compiler (`$CC`, else
//! `cc`) and re-runs this test binary with `LD_LIBRARY_PATH` pointing at it, since the
//! loader reads that variable only at process start.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use xbarrier_api::{Backend, BarrierOp, Error, FaultKind, KernelArg, LaunchConfig};
use xbarrier_backend_hip::Hip;

const CHILD: &str = "XBARRIER_FAKE_HIP_CHILD";

#[test]
fn backend_runs_on_a_fake_runtime() {
    if std::env::var_os(CHILD).is_some() {
        scenario();
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-hip");
    std::fs::create_dir_all(&dir).unwrap();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_hip.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(dir.join("libamdhip64.so"))
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("this test needs a C compiler (`{cc}`, or set CC): {e}"));
    assert!(status.success(), "{cc} failed on {}", source.display());

    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "backend_runs_on_a_fake_runtime", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("LD_LIBRARY_PATH", &dir)
        .env_remove("ROCM_PATH")
        .env_remove("HIP_PATH")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    eprintln!("{text}");
    assert!(output.status.success() && text.contains("1 passed"), "the scenario failed");
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

    // Fault records are reported with the kernel's name, then cleared.
    let fault = Hip::function(&device, &module, "fault").unwrap();
    // SAFETY: fault(unsigned).
    unsafe { Hip::launch(&device, &stream, &fault, &LaunchConfig::new(1, 32), &[KernelArg::U32(3)]) }.unwrap();
    match Hip::synchronize(&device, &stream) {
        Err(Error::Fault(f)) => {
            assert_eq!((f.kernel.as_str(), f.kind, f.op), ("fault", FaultKind::OverArrival, BarrierOp::Arrive));
            assert_eq!((f.record.thread, f.record.value, f.record.limit), ([3, 0, 0], 5, 2));
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    Hip::synchronize(&device, &stream).unwrap();
    // A module without the global is not checked.
    let plain = Hip::load_module(&device, "plain", b"FAKE module").unwrap();
    let fault_plain = Hip::function(&device, &plain, "fault").unwrap();
    // SAFETY: as above (the fake writes into its own module's record, which nobody reads).
    unsafe { Hip::launch(&device, &stream, &fault_plain, &LaunchConfig::new(1, 1), &[KernelArg::U32(3)]) }.unwrap();
    Hip::synchronize(&device, &stream).unwrap();

    // Events and time limits.
    let spin = Hip::function(&device, &plain, "spin").unwrap();
    let start = Hip::record(&device, &stream).unwrap();
    // SAFETY: spin(u64).
    unsafe { Hip::launch(&device, &stream, &spin, &LaunchConfig::new(1, 1), &[KernelArg::U64(20_000_000)]) }.unwrap();
    let end = Hip::record(&device, &stream).unwrap();
    Hip::synchronize(&device, &stream).unwrap();
    let took = Hip::elapsed(&start, &end).unwrap();
    assert!(took >= Duration::from_millis(15) && took < Duration::from_secs(5), "{took:?}");
    let config = LaunchConfig::new(1, 1).timeout(Duration::from_millis(2));
    // SAFETY: as above.
    unsafe { Hip::launch(&device, &stream, &spin, &config, &[KernelArg::U64(20_000_000)]) }.unwrap();
    match Hip::synchronize(&device, &stream) {
        Err(Error::LaunchTimeout { kernel, .. }) => assert_eq!(kernel, "spin"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    Hip::synchronize(&device, &stream).unwrap();
}
