//! smoke
use xbarrier::*;
/// smoke
pub fn smoke<B: Backend>(threads: u32, phases: u32) -> Result<Vec<u32>> {
    let bundle = kernel_bundle!("conformance")?;
    let dev = Device::<B>::open(0)?;
    let m = dev.load(&bundle)?;
    let k = m.kernel("smoke")?;
    let out = dev.alloc::<u32>(threads as usize * 2)?;
    let s = dev.stream()?;
    let t = std::time::Instant::now();
    unsafe { s.launch(&k, &LaunchConfig::new(2, threads), &[out.arg(), phases.into(), 3.0f32.into()])? };
    eprintln!("{threads} threads x {phases} phases x2 blocks: {:?}", t.elapsed());
    out.download()
}
