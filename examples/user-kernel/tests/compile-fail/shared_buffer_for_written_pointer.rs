//! stream_in(const float* in, float* out, unsigned n) given `&output` for `out`, which the
//! kernel writes.
use xbarrier::{Device, Host, LaunchConfig};
use xbarrier_example_user_kernel::user_kernels::Kernels;

fn main() -> xbarrier::Result<()> {
    let device = Device::<Host>::open(0)?;
    let kernels = Kernels::load(&device)?;
    let input = device.upload(&[1.0f32; 1024])?;
    let output = device.alloc::<f32>(1024)?;
    let stream = device.stream()?;
    kernels.stream_in(&stream, &LaunchConfig::new(1, 256), &input, &output, 1024)?.wait()
}
