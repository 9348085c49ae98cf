//! Runs the backend on a real NVIDIA GPU with hand-written PTX (no nvcc needed).
//!
//! These tests need a GPU and are ignored by default; run them on a GPU machine with
//! `cargo test -p xbarrier-backend-cuda --test gpu -- --include-ignored`. There a missing
//! device is a failure, not a skip.

use std::time::Duration;

use xbarrier_api::{
    Backend, BackendKind, BarrierOp, Device, Error, FaultKind, KernelArg, KernelBundle, LaunchConfig, Variant,
};
use xbarrier_backend_cuda::{Cuda, CudaDevice};

const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .global .align 8 .b8 xb_fault_record_slot[88];
.extern .shared .align 16 .b8 dsmem[];

// out[i] += f for i < n
.visible .entry add(.param .u64 p_out, .param .u32 p_n, .param .f32 p_f)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [p_out];
    ld.param.u32 %r1, [p_n];
    ld.param.f32 %f2, [p_f];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd4], %f3;
DONE:
    ret;
}

// out[0..6] = the arguments, widened to 64 bits
.visible .entry echo(.param .u64 p_out, .param .u32 p_a, .param .f32 p_b, .param .u64 p_c,
                     .param .f64 p_d, .param .s32 p_e)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<2>;
    .reg .f64 %fd<2>;
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u32 %r1, [p_a];
    cvt.u64.u32 %rd2, %r1;
    st.global.u64 [%rd1], %rd2;
    ld.param.f32 %f1, [p_b];
    mov.b32 %r2, %f1;
    cvt.u64.u32 %rd3, %r2;
    st.global.u64 [%rd1+8], %rd3;
    ld.param.u64 %rd4, [p_c];
    st.global.u64 [%rd1+16], %rd4;
    ld.param.f64 %fd1, [p_d];
    st.global.f64 [%rd1+24], %fd1;
    ld.param.s32 %r3, [p_e];
    cvt.s64.s32 %rd5, %r3;
    st.global.u64 [%rd1+32], %rd5;
    ret;
}

// Writes a fault record as the platform layer would: op, block/thread, value, then kind.
.visible .entry faulty(.param .u32 p_kind)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 3;
    @%p1 bra DONE;
    mov.u64 %rd1, xb_fault_record_slot;
    mov.u32 %r3, 2;
    st.global.u32 [%rd1+4], %r3;
    st.global.u32 [%rd1+20], %r1;
    mov.u64 %rd2, 5;
    st.global.u64 [%rd1+40], %rd2;
    mov.u64 %rd2, 2;
    st.global.u64 [%rd1+48], %rd2;
    st.global.u64 [%rd1+56], %rd2;
    st.global.u32 [%rd1+84], %r3;
    membar.gl;
    ld.param.u32 %r2, [p_kind];
    st.global.u32 [%rd1], %r2;
DONE:
    ret;
}

// Uses 64 KiB of dynamic shared memory: writes its last word, reads it back into out[0].
.visible .entry big_shared(.param .u64 p_out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, dsmem;
    add.u32 %r1, %r1, 65532;
    mov.u32 %r3, 12345;
    st.shared.u32 [%r1], %r3;
    bar.sync 0;
    ld.shared.u32 %r2, [%r1];
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    st.global.u32 [%rd1], %r2;
    ret;
}

// 16 bytes of static shared memory beside the dynamic ones: writes the static array and the
// last word of a 48 KiB dynamic area, reads both back into out[0] (their sum).
.visible .entry static_and_dynamic_shared(.param .u64 p_out)
{
    .shared .align 16 .b8 fixed[16];
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, dsmem;
    add.u32 %r1, %r1, 49148;
    mov.u32 %r3, 1000;
    st.shared.u32 [%r1], %r3;
    mov.u32 %r4, fixed;
    mov.u32 %r5, 234;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    ld.shared.u32 %r2, [%r1];
    ld.shared.u32 %r6, [%r4];
    add.u32 %r7, %r2, %r6;
    ld.param.u64 %rd1, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    st.global.u32 [%rd1], %r7;
    ret;
}

// Spins for about p_ns nanoseconds of %globaltimer.
.visible .entry spin(.param .u64 p_ns)
{
    .reg .b64 %rd<6>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [p_ns];
    mov.u64 %rd2, %globaltimer;
    add.u64 %rd3, %rd2, %rd1;
LOOP:
    mov.u64 %rd4, %globaltimer;
    setp.lt.u64 %p1, %rd4, %rd3;
    @%p1 bra LOOP;
    ret;
}
"#;

fn image() -> &'static [u8] {
    PTX.as_bytes()
}

/// The PTX as a kernel bundle, for the tests that go through the generic wrappers, which
/// read fault records and time launches.
fn bundle() -> KernelBundle {
    let bytes = KernelBundle::encode(false, &[(BackendKind::Cuda, Variant::Default, image().to_vec())]);
    KernelBundle::parse("ptx", Box::leak(bytes.into_boxed_slice())).unwrap()
}

fn device() -> CudaDevice {
    match Cuda::open(0) {
        Ok(device) => device,
        Err(e) => panic!("these tests need an NVIDIA GPU: {e}"),
    }
}

fn read_f32(device: &CudaDevice, memory: &<Cuda as Backend>::Memory, n: usize) -> Vec<f32> {
    let mut bytes = vec![0u8; n * 4];
    Cuda::read(device, memory, 0, &mut bytes).unwrap();
    bytes.chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn describes_the_device() {
    let device = device();
    let info = Cuda::info(&device);
    eprintln!("{info:?}");
    assert!(info.arch.starts_with("sm_"));
    assert_eq!(info.wave_size, 32);
    assert!(info.multiprocessors > 0 && info.max_cooperative_blocks >= info.multiprocessors);
    assert!(info.max_threads_per_block >= 1024);
    assert!(info.max_dynamic_shared_bytes > 48 * 1024, "{info:?}");
    assert!(Cuda::device_count().unwrap() >= 1);
    assert!(matches!(Cuda::open(1 << 20), Err(Error::NoDevice { .. })));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn memory_round_trip_with_offsets() {
    let device = device();
    let mut memory = Cuda::alloc(&device, 1000).unwrap();
    assert_eq!(Cuda::address(&memory) % 256, 0);
    let mut zeros = vec![1u8; 1000];
    Cuda::read(&device, &memory, 0, &mut zeros).unwrap();
    assert!(zeros.iter().all(|&b| b == 0), "alloc must zero-fill");
    Cuda::write(&device, &mut memory, 100, &[1, 2, 3]).unwrap();
    let mut out = [0u8; 5];
    Cuda::read(&device, &memory, 99, &mut out).unwrap();
    assert_eq!(out, [0, 1, 2, 3, 0]);
    assert!(matches!(Cuda::write(&device, &mut memory, 999, &[1, 2]), Err(Error::InvalidArgument { .. })));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn device_to_device_copy_on_a_stream() {
    let device = device();
    let stream = Cuda::create_stream(&device).unwrap();
    let mut src = Cuda::alloc(&device, 64).unwrap();
    Cuda::write(&device, &mut src, 8, &[1, 2, 3, 4]).unwrap();
    let mut dst = Cuda::alloc(&device, 16).unwrap();
    Cuda::copy_device(&device, &stream, &mut dst, 2, &src, 7, 6).unwrap();
    Cuda::synchronize(&device, &stream).unwrap();
    let mut out = [9u8; 10];
    Cuda::read(&device, &dst, 0, &mut out).unwrap();
    assert_eq!(out, [0, 0, 0, 1, 2, 3, 4, 0, 0, 0]);
    assert!(matches!(
        Cuda::copy_device(&device, &stream, &mut dst, 12, &src, 0, 5),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Cuda::copy_device(&device, &stream, &mut dst, 0, &src, 60, 5),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn launches_and_marshals_every_argument_type() {
    let device = device();
    let module = Cuda::load_module(&device, "ptx", image()).unwrap();
    let stream = Cuda::create_stream(&device).unwrap();

    let n = 1000usize;
    let mut data = Cuda::alloc(&device, n * 4).unwrap();
    let ones: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_ne_bytes()).collect();
    Cuda::write(&device, &mut data, 0, &ones).unwrap();
    let add = Cuda::function(&device, &module, "add").unwrap();
    let args = [KernelArg::Ptr(Cuda::address(&data)), KernelArg::U32(n as u32), KernelArg::F32(0.5)];
    // SAFETY: add(float*, unsigned, float); `data` outlives the synchronize.
    unsafe { Cuda::launch(&device, &stream, &add, &LaunchConfig::new(4, 256), &args) }.unwrap();
    Cuda::synchronize(&device, &stream).unwrap();
    let got = read_f32(&device, &data, n);
    assert!(got.iter().enumerate().all(|(i, &v)| v == i as f32 + 0.5), "{:?}", &got[..8]);

    let out = Cuda::alloc(&device, 5 * 8).unwrap();
    let echo = Cuda::function(&device, &module, "echo").unwrap();
    let args = [
        KernelArg::Ptr(Cuda::address(&out)),
        KernelArg::U32(0xdead_beef),
        KernelArg::F32(-1.25),
        KernelArg::U64(0x0123_4567_89ab_cdef),
        KernelArg::F64(3.5),
        KernelArg::I32(-7),
    ];
    // SAFETY: echo(u64*, unsigned, float, u64, double, int); `out` outlives the synchronize.
    unsafe { Cuda::launch(&device, &stream, &echo, &LaunchConfig::new(1, 1), &args) }.unwrap();
    Cuda::synchronize(&device, &stream).unwrap();
    let mut bytes = [0u8; 40];
    Cuda::read(&device, &out, 0, &mut bytes).unwrap();
    let words: Vec<u64> = bytes.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect();
    assert_eq!(words[0], 0xdead_beef);
    assert_eq!(words[1], u64::from((-1.25f32).to_bits()));
    assert_eq!(words[2], 0x0123_4567_89ab_cdef);
    assert_eq!(f64::from_bits(words[3]), 3.5);
    assert_eq!(words[4] as i64, -7);

    // Cooperative launch of as many blocks as the device promises.
    let blocks = Cuda::info(&device).max_cooperative_blocks;
    let config = LaunchConfig::new(blocks, 32).cooperative();
    let args = [KernelArg::Ptr(Cuda::address(&data)), KernelArg::U32(n as u32), KernelArg::F32(1.0)];
    // SAFETY: as for the first launch.
    unsafe { Cuda::launch(&device, &stream, &add, &config, &args) }.unwrap();
    Cuda::synchronize(&device, &stream).unwrap();
    let got = read_f32(&device, &data, n);
    let covered = (blocks as usize * 32).min(n);
    assert!(got[..covered].iter().enumerate().all(|(i, &v)| v == i as f32 + 1.5));
}

/// Launches `kernel(unsigned* out)` as one block of 32 threads with `shared` bytes of dynamic
/// shared memory and returns out[0].
fn one_word_from(kernel: &str, shared: u32) -> u32 {
    let device = device();
    let module = Cuda::load_module(&device, "ptx", image()).unwrap();
    let stream = Cuda::create_stream(&device).unwrap();
    let out = Cuda::alloc(&device, 4).unwrap();
    let kernel = Cuda::function(&device, &module, kernel).unwrap();
    let config = LaunchConfig::new(1, 32).shared(shared);
    // SAFETY: the kernels given here take (unsigned*); `out` outlives the synchronize.
    unsafe { Cuda::launch(&device, &stream, &kernel, &config, &[KernelArg::Ptr(Cuda::address(&out))]) }.unwrap();
    Cuda::synchronize(&device, &stream).unwrap();
    let mut bytes = [0u8; 4];
    Cuda::read(&device, &out, 0, &mut bytes).unwrap();
    u32::from_ne_bytes(bytes)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn large_dynamic_shared_memory_opts_in() {
    assert_eq!(one_word_from("big_shared", 64 * 1024), 12345);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn exactly_48_kib_of_dynamic_shared_memory_beside_static_shared_launches() {
    assert_eq!(one_word_from("static_and_dynamic_shared", 48 * 1024), 1234);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn fault_record_is_reported_once_and_cleared() {
    // The backend reads the record and clears it.
    let raw = device();
    let module = Cuda::load_module(&raw, "ptx", image()).unwrap();
    let raw_stream = Cuda::create_stream(&raw).unwrap();
    let faulty = Cuda::function(&raw, &module, "faulty").unwrap();
    // SAFETY: faulty(unsigned).
    unsafe { Cuda::launch(&raw, &raw_stream, &faulty, &LaunchConfig::new(1, 32), &[KernelArg::U32(3)]) }.unwrap();
    Cuda::synchronize(&raw, &raw_stream).unwrap();
    let record = Cuda::take_fault(&raw, &module).unwrap().expect("the kernel recorded a fault");
    assert_eq!((record.kind, record.op, record.thread), (3, 2, [3, 0, 0]));
    assert_eq!(Cuda::take_fault(&raw, &module).unwrap(), None, "cleared");

    // A stream reports it once, naming the kernel.
    let device = Device::<Cuda>::open(0).unwrap();
    let module = device.load(&bundle()).unwrap();
    let stream = device.stream().unwrap();
    let kernel = module.kernel("faulty").unwrap();
    // SAFETY: faulty(unsigned).
    unsafe { stream.launch(&kernel, &LaunchConfig::new(1, 32), &[KernelArg::U32(3)]) }.unwrap();
    match stream.synchronize() {
        Err(Error::Fault(fault)) => {
            eprintln!("{fault}");
            assert_eq!(fault.kernel, "faulty");
            assert_eq!(fault.kind, FaultKind::OverArrival);
            assert_eq!(fault.op, BarrierOp::Arrive);
            assert_eq!(fault.record.thread, [3, 0, 0]);
            assert_eq!((fault.record.value, fault.record.limit), (5, 2));
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    // Cleared: a clean launch (kind 0 leaves the record empty) synchronizes fine.
    // SAFETY: as above.
    unsafe { stream.launch(&kernel, &LaunchConfig::new(1, 32), &[KernelArg::U32(0)]) }.unwrap();
    // The kernel wrote op etc. with kind 0: not a fault, but cleared all the same.
    stream.synchronize().unwrap();
    stream.synchronize().unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn errors_keep_names_and_codes() {
    let device = device();
    let module = Cuda::load_module(&device, "ptx", image()).unwrap();
    match Cuda::function(&device, &module, "nope") {
        Err(Error::KernelNotFound { module, kernel }) => {
            assert_eq!((module.as_str(), kernel.as_str()), ("ptx", "nope"))
        }
        other => panic!("expected KernelNotFound, got {:?}", other.err()),
    }
    match Cuda::load_module(&device, "junk", b"this is not a module") {
        Err(Error::Driver { call, code, name, .. }) => {
            eprintln!("{call}: {name} ({code})");
            assert_eq!(call, "cuModuleLoadData");
            assert!(name.starts_with("CUDA_ERROR_"), "{name}");
        }
        other => panic!("expected a driver error, got {:?}", other.err()),
    }
    let stream = Cuda::create_stream(&device).unwrap();
    let add = Cuda::function(&device, &module, "add").unwrap();
    let too_many = Cuda::info(&device).multiprocessors * 64;
    let config = LaunchConfig::new(too_many, 1024).cooperative();
    // SAFETY: arguments match add(); the driver refuses the grid before running anything.
    let refused = unsafe {
        Cuda::launch(&device, &stream, &add, &config, &[KernelArg::Ptr(0), KernelArg::U32(0), KernelArg::F32(0.0)])
    };
    match refused {
        Err(Error::Driver { call, name, .. }) => {
            assert_eq!(call, "cuLaunchCooperativeKernel");
            assert!(name.contains("COOPERATIVE_LAUNCH_TOO_LARGE"), "{name}");
        }
        other => panic!("expected the driver to refuse, got {other:?}"),
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn events_time_and_timeouts_are_reported() {
    let device = device();
    let module = Cuda::load_module(&device, "ptx", image()).unwrap();
    let stream = Cuda::create_stream(&device).unwrap();
    let spin = Cuda::function(&device, &module, "spin").unwrap();
    let start = Cuda::record(&device, &stream).unwrap();
    // SAFETY: spin(u64).
    unsafe { Cuda::launch(&device, &stream, &spin, &LaunchConfig::new(1, 1), &[KernelArg::U64(20_000_000)]) }.unwrap();
    let end = Cuda::record(&device, &stream).unwrap();
    Cuda::synchronize(&device, &stream).unwrap();
    let took = Cuda::elapsed(&start, &end).unwrap();
    eprintln!("spin of 20 ms took {took:?}");
    assert!(took >= Duration::from_millis(15) && took < Duration::from_secs(2), "{took:?}");

    // Time limits: a stream times the launch with two events and reports the overrun.
    let device = Device::<Cuda>::open(0).unwrap();
    let spin = device.load(&bundle()).unwrap().kernel("spin").unwrap();
    let stream = device.stream().unwrap();
    let config = LaunchConfig::new(1, 1).timeout(Duration::from_millis(2));
    // SAFETY: as above.
    unsafe { stream.launch(&spin, &config, &[KernelArg::U64(20_000_000)]) }.unwrap();
    match stream.synchronize() {
        Err(Error::LaunchTimeout { kernel, seconds }) => {
            assert_eq!(kernel, "spin");
            assert!((seconds - 0.002).abs() < 1e-9);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let config = LaunchConfig::new(1, 1).timeout(Duration::from_secs(5));
    // SAFETY: as above.
    unsafe { stream.launch(&spin, &config, &[KernelArg::U64(1_000)]) }.unwrap();
    stream.synchronize().unwrap();
}
