//! The launches the compile-fail cases get wrong, written right: this compiles and runs.
use xbarrier::{Device, Host, LaunchConfig};
use xbarrier_example_user_kernel::user_kernels::Kernels;

fn main() -> xbarrier::Result<()> {
    let device = Device::<Host>::open(0)?;
    let kernels = Kernels::load(&device)?;
    let input = device.upload(&[1.5f32; 1024])?;
    let mut output = device.alloc::<f32>(1024)?;
    let stream = device.stream()?;
    let launch = kernels.stream_in(&stream, &LaunchConfig::new(1, 256).shared(4096), &input, &mut output, 1024)?;
    launch.wait()?;
    assert_eq!(output.download()?, vec![3.0f32; 1024]);
    drop(input);
    // A dropped Launch waits for the stream too; the buffers are free again afterwards.
    let mut again = device.alloc::<f32>(1024)?;
    drop(kernels.stream_in(&stream, &LaunchConfig::new(1, 256).shared(4096), &output, &mut again, 1024)?);
    assert_eq!(again.download()?, vec![6.0f32; 1024]);
    Ok(())
}
