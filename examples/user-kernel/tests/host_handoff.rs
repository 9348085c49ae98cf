//! A typed launch with a barrier host threads share (`xb::barrier<xb::thread_scope_system>*`
//! takes `&SystemBarrier<B>`, `const unsigned*` and `unsigned*` take `&SystemBuffer<B, u32>`)
//! while the host feeds the kernel through it, phase by phase, and reads its results.

use xbarrier::{DefaultDevice, LaunchConfig, SystemBarrier};
use xbarrier_example_user_kernel::user_kernels::Kernels;

#[test]
#[cfg_attr(
    any(feature = "cuda", feature = "hip"),
    ignore = "needs a GPU: run with --include-ignored on a GPU machine (tools/device-run.sh does)"
)]
fn host_feeds_a_running_kernel() -> xbarrier::Result<()> {
    // A missing device fails the test: it only runs where one is expected.
    let device = DefaultDevice::open(0)?;
    let kernels = Kernels::load(&device)?;
    let (blocks, threads, phases) = (2u32, 32u32, 200u32);
    let n = blocks * threads;
    let barrier = SystemBarrier::new(&device, u64::from(n) + 1)?;
    let from_host = device.alloc_system::<u32>(1)?;
    let sums = device.alloc_system::<u32>(n as usize)?;
    let stream = device.stream()?;
    std::thread::scope(|s| -> xbarrier::Result<()> {
        // Wrong sums are kept, not asserted at once: the kernel waits for every phase's
        // arrivals, and a host thread that stopped would leave it waiting.
        let host = s.spawn(|| -> xbarrier::Result<Vec<String>> {
            let (mut fed, mut wrong) = (0u32, Vec::new());
            for p in 0..phases {
                from_host.store(0, p * 3)?;
                fed += p * 3;
                barrier.arrive_and_wait()?; // the kernel reads the value
                barrier.arrive_and_wait()?; // the kernel has written its sums
                for t in [0, n / 2, n - 1] {
                    let (got, want) = (sums.load(t as usize)?, fed + (p + 1) * t);
                    if got != want {
                        wrong.push(format!("thread {t} after phase {p}: {got}, want {want}"));
                    }
                }
            }
            Ok(wrong)
        });
        let config = LaunchConfig::new(blocks, threads).cooperative();
        kernels.host_handoff(&stream, &config, &barrier, &from_host, &sums, phases)?.wait()?;
        let wrong = host.join().expect("the host thread does not panic")?;
        assert!(wrong.is_empty(), "{wrong:?}");
        Ok(())
    })
}
