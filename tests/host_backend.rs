//! Host-backend behaviour that has no GPU counterpart: C++ exceptions escaping a kernel, and
//! launches larger than the host can keep resident.
use xbarrier::{Device, Error, Host, LaunchConfig};

fn module() -> xbarrier::Module<Host> {
    let device = Device::<Host>::open(0).expect("the host device always exists");
    let bundle = xbarrier_conformance::bundle().expect("conformance bundle");
    device.load(&bundle).expect("conformance kernels load")
}

#[test]
fn escaping_cpp_exception_is_an_error() {
    let module = module();
    let kernel = module.kernel("xbh_throws").expect("kernel exists");
    let stream = Device::<Host>::open(0).and_then(|d| d.stream()).expect("stream");
    // SAFETY: xbh_throws(unsigned fb, unsigned ft).
    let result = unsafe { stream.launch(&kernel, &LaunchConfig::new(2, 4), &[1u32.into(), 2u32.into()]) };
    match result {
        Err(Error::KernelException { kernel, .. }) => assert_eq!(kernel, "xbh_throws"),
        other => panic!("expected KernelException, got {other:?}"),
    }
}

#[test]
fn oversized_cooperative_launch_is_refused_clearly() {
    let module = module();
    let kernel = module.kernel("xbc_round_trip").expect("kernel exists");
    let stream = Device::<Host>::open(0).and_then(|d| d.stream()).expect("stream");
    // SAFETY: xbc_round_trip(unsigned phases); refused before anything runs.
    let result = unsafe { stream.launch(&kernel, &LaunchConfig::new(64, 1024).cooperative(), &[1u32.into()]) };
    match result {
        Err(Error::InvalidArgument { call: "launch", reason }) => assert!(reason.contains("resident"), "{reason}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// Every running block has its own copy of the kernel object, hence its own `__shared__`
/// variables, also after a cooperative launch returned its copies to the pool (a double
/// return once let two later blocks share one barrier).
#[test]
fn blocks_never_share_static_shared_memory() {
    let device = Device::<Host>::open(0).expect("host device");
    let module = module();
    let stream = device.stream().expect("stream");
    let round_trip = module.kernel("xbc_round_trip").expect("kernel exists");
    let reuse = module.kernel("xbc_reuse").expect("kernel exists");
    for _ in 0..5 {
        // SAFETY: xbc_round_trip(unsigned phases).
        unsafe { stream.launch(&round_trip, &LaunchConfig::new(1, 2).cooperative(), &[1u32.into()]) }
            .expect("cooperative launch");
        let report = device.alloc::<u64>(8).expect("report");
        // Two resident blocks: with a shared copy they would arrive on one barrier.
        // SAFETY: xbc_reuse(unsigned long long* report, unsigned phases); report outlives the launch.
        unsafe { stream.launch(&reuse, &LaunchConfig::new(2, 64).cooperative(), &[report.arg(), 20u32.into()]) }
            .expect("blocks with separate shared memory cannot fault");
        assert_eq!(report.download().expect("read")[0], 0, "a block saw another block's shared data");
    }
}
