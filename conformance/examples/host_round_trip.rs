//! Times `phases` x arrive_and_wait of one block on the host backend, per block size.
//! Usage: cargo run --release -p xbarrier-conformance --example host_round_trip [phases]
use std::time::Instant;

use xbarrier::{Device, Host, LaunchConfig};

fn main() -> xbarrier::Result<()> {
    let phases: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let device = Device::<Host>::open(0)?;
    let module = device.load(&xbarrier::kernel_bundle!("conformance")?)?;
    let kernel = module.kernel("xbc_round_trip")?;
    let stream = device.stream()?;
    println!("device: {}; checked device code: {}", device.info().name, module.checked());
    println!("| threads | phases | best of 5 (ms) | per phase (us) |");
    println!("| ---: | ---: | ---: | ---: |");
    for threads in [2u32, 8, 64, 256, 1024] {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let start = Instant::now();
            // SAFETY: xbc_round_trip(unsigned phases).
            unsafe { stream.launch(&kernel, &LaunchConfig::new(1, threads), &[phases.into()])? };
            stream.synchronize()?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!("| {threads} | {phases} | {:.1} | {:.2} |", best * 1e3, best * 1e6 / f64::from(phases));
    }
    Ok(())
}
