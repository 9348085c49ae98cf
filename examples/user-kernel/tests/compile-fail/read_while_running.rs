//! A buffer read from the host while the launch that writes it may still run.
use xbarrier::{Device, Host, LaunchConfig};
use xbarrier_example_user_kernel::user_kernels::Kernels;

fn main() -> xbarrier::Result<()> {
    let device = Device::<Host>::open(0)?;
    let kernels = Kernels::load(&device)?;
    let input = device.upload(&[1.0f32; 1024])?;
    let mut output = device.alloc::<f32>(1024)?;
    let stream = device.stream()?;
    let launch = kernels.stream_in(&stream, &LaunchConfig::new(1, 256), &input, &mut output, 1024)?;
    let early = output.download()?;
    launch.wait()?;
    assert_eq!(early.len(), 1024);
    Ok(())
}
