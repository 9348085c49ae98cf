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
