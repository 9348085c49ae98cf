//! A typed launch with a barrier host threads share (`xb::barrier<xb::thread_scope_system>*`
//! takes `&SystemBarrier<B>`, `const unsigned*` and `unsigned*` take `&SystemBuffer<B, u32>`)
//! while the host feeds the kernel through it, phase by phase, and reads its results.

use xbarrier::{DefaultBackend, Device, Error, LaunchConfig, SystemBarrier};
use xbarrier_example_user_kernel::user_kernels::Kernels;

#[test]
fn host_feeds_a_running_kernel() -> xbarrier::Result<()> {
    let device = match Device::<DefaultBackend>::open(0) {
        Err(Error::LibraryNotFound { hint, .. } | Error::NoDevice { hint, .. })
            if std::env::var("XBAR_REQUIRE_GPU").as_deref() != Ok("1") =>
        {
            eprintln!("skipped: {hint}");
            return Ok(());
        }
        other => other?,
    };
    let kernels = Kernels::load(&device)?;
    let (blocks, threads, phases) = (2u32, 32u32, 200u32);
    let n = blocks * threads;
    let barrier = SystemBarrier::new(&device, u64::from(n) + 1)?;
    let from_host = device.alloc_system::<u32>(1)?;
    let sums = device.alloc_system::<u32>(n as usize)?;
    let stream = device.stream()?;
    std::thread::scope(|s| -> xbarrier::Result<()> {
        let host = s.spawn(|| -> xbarrier::Result<()> {
            let mut fed = 0u32;
            for p in 0..phases {
                from_host.store(0, p * 3)?;
                fed += p * 3;
                barrier.arrive_and_wait()?; // the kernel reads the value
                barrier.arrive_and_wait()?; // the kernel has written its sums
                for t in [0, n / 2, n - 1] {
                    assert_eq!(sums.load(t as usize)?, fed + (p + 1) * t, "thread {t} after phase {p}");
                }
            }
            Ok(())
        });
        let config = LaunchConfig::new(blocks, threads).cooperative();
        kernels.host_handoff(&stream, &config, &barrier, &from_host, &sums, phases)?.wait()?;
        host.join().expect("the host thread does not panic")
    })
}
