//! Runs the crate's own kernel (kernels/pipeline.cpp) on xbarrier's default backend and
//! checks the result against the CPU.

use std::process::ExitCode;

use xbarrier::{DefaultDevice, LaunchConfig};
use xbarrier_example_user_kernel::user_kernels;

fn run() -> xbarrier::Result<()> {
    let (blocks, threads, tiles_per_block, tile_floats) = (8u32, 128u32, 64u32, 1024u32);
    let input: Vec<f32> =
        (0..blocks * tiles_per_block * tile_floats).map(|i| ((i * 7919) % 1000) as f32 * 0.5).collect();

    let device = DefaultDevice::open(0)?;
    let kernels = user_kernels::Kernels::load(&device)?;
    let data = device.upload(&input)?;
    let mut sums = device.alloc::<f64>(blocks as usize)?;
    let stream = device.stream()?;
    let config = LaunchConfig::new(blocks, threads).shared(2 * tile_floats * 4);
    let start = stream.record()?;
    // tiled_sum(const float* in, unsigned tiles_per_block, unsigned tile_floats, double* block_sums)
    kernels.tiled_sum(&stream, &config, &data, tiles_per_block, tile_floats, &mut sums)?.wait()?;
    let end = stream.record()?;

    let got = sums.download()?;
    let per_block = (tiles_per_block * tile_floats) as usize;
    for (b, chunk) in input.chunks(per_block).enumerate() {
        let want: f64 = chunk.iter().map(|&x| f64::from(x)).sum();
        if (got[b] - want).abs() > 1e-6 * want.abs().max(1.0) {
            return Err(xbarrier::Error::InvalidArgument {
                call: "tiled_sum",
                reason: format!("block {b}: got {}, want {want}", got[b]),
            });
        }
    }
    println!(
        "tiled_sum on {} ({}): {blocks} blocks x {threads} threads, {} floats through a 2-stage tx pipeline in {:.2} ms; all {blocks} block sums match",
        device.info().name,
        device.info().backend,
        input.len(),
        start.elapsed_until(&end)?.as_secs_f64() * 1e3
    );
    readme_kernel()
}

/// The README's kernel (kernels/readme.cpp), launched with the README's code: the README shows
/// the lines between the two `README` markers, and `tests/readme.rs` checks that it does.
fn readme_kernel() -> xbarrier::Result<()> {
    // README: launch
    let device = DefaultDevice::open(0)?;
    let kernels = user_kernels::Kernels::load(&device)?;
    let values: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let input = device.upload(&values)?;
    let mut output = device.alloc::<f32>(1024)?;
    let stream = device.stream()?;
    // stream_in(const float* in, float* out, unsigned n): &Buffer, &mut Buffer, u32.
    let launch = kernels.stream_in(&stream, &LaunchConfig::new(1, 256).shared(4096), &input, &mut output, 1024)?;
    launch.wait()?; // until then `output` stays borrowed: no read, write or drop
                    // README: end
    let got = output.download()?;
    if let Some(i) = (0..1024).find(|&i| got[i] != 2.0 * values[i]) {
        return Err(xbarrier::Error::InvalidArgument {
            call: "stream_in",
            reason: format!("out[{i}] = {}, want {}", got[i], 2.0 * values[i]),
        });
    }
    println!("README kernel stream_in: 1024 floats doubled through one tx-count phase; all match");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
