//! The backend on Linux x86-64 and AArch64: devices, memory, modules and launches.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use xbarrier_api::{Backend, BackendKind, DeviceInfo, Error, KernelArg, LaunchConfig, Result};

use crate::settings::Settings;
use crate::{launch, module, Host};

/// A host device: the CPU, one of `XBAR_HOST_DEVICES` stand-ins ([`Settings::devices`]).
pub struct HostDevice {
    info: DeviceInfo,
    settings: Settings,
}

/// A host allocation (256-byte aligned, zero-filled).
pub struct HostMemory {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: plain heap memory; access is serialized by launches being synchronous.
unsafe impl Send for HostMemory {}
// SAFETY: as above.
unsafe impl Sync for HostMemory {}

impl Drop for HostMemory {
    fn drop(&mut self) {
        // SAFETY: allocated in `alloc` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A loaded module (shared with its functions).
pub struct HostModule(Arc<module::SlotPool>);

/// A kernel of a loaded module.
#[derive(Clone)]
pub struct HostFunction {
    module: Arc<module::SlotPool>,
    name: String,
}

/// Launches on the host run to completion when enqueued, so a stream holds no state.
pub struct HostStream;

/// A point in time.
pub struct HostEvent(Instant);

impl Backend for Host {
    const KIND: BackendKind = BackendKind::Host;
    // A launch runs to completion before returning; blocks check the deadline and stop.
    const ENFORCES_TIMEOUTS: bool = true;
    type Device = HostDevice;
    type Memory = HostMemory;
    type Module = HostModule;
    type Function = HostFunction;
    type Stream = HostStream;
    type Event = HostEvent;

    fn device_count() -> Result<usize> {
        Ok(Settings::from_env().devices)
    }

    fn open(ordinal: usize) -> Result<HostDevice> {
        let settings = Settings::from_env();
        if ordinal >= settings.devices {
            return Err(Error::NoDevice {
                backend: BackendKind::Host,
                ordinal,
                found: settings.devices,
                hint: format!(
                    "the host backend has {} devices (XBAR_HOST_DEVICES sets how many, up to {})",
                    settings.devices,
                    crate::settings::MAX_DEVICES
                ),
            });
        }
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as u32;
        let mut info = DeviceInfo::new(
            BackendKind::Host,
            ordinal,
            format!("host CPU ({cores} threads)"),
            format!("host-{}", std::env::consts::ARCH),
        );
        info.wave_size = 1;
        info.multiprocessors = cores;
        info.max_cooperative_blocks = settings.max_resident_blocks as u32;
        info.max_threads_per_block = 1024;
        info.max_dynamic_shared_bytes = 1 << 20;
        Ok(HostDevice { info, settings })
    }

    fn info(device: &HostDevice) -> DeviceInfo {
        device.info.clone()
    }

    fn alloc(_device: &HostDevice, bytes: usize) -> Result<HostMemory> {
        let layout = Layout::from_size_align(bytes.max(1), 256)
            .map_err(|e| Error::InvalidArgument { call: "alloc", reason: format!("{bytes} bytes: {e}") })?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(Error::OutOfMemory { backend: BackendKind::Host, requested: bytes })?;
        Ok(HostMemory { ptr, layout })
    }

    /// Ordinary memory: kernel threads are host threads here.
    fn alloc_system(device: &HostDevice, _peers: &[&HostDevice], bytes: usize) -> Result<HostMemory> {
        Self::alloc(device, bytes)
    }

    /// Every host device's memory is the process's: each reaches the others'.
    fn enable_peer_access(_device: &HostDevice, _peer: &HostDevice) -> Result<()> {
        Ok(())
    }

    fn address(memory: &HostMemory) -> u64 {
        memory.ptr.as_ptr() as u64
    }

    fn write(_device: &HostDevice, memory: &mut HostMemory, offset: usize, src: &[u8]) -> Result<()> {
        check_bounds(memory, offset, src.len())?;
        // SAFETY: bounds checked above; `src` cannot overlap memory we own exclusively here.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), memory.ptr.as_ptr().add(offset), src.len()) };
        Ok(())
    }

    fn read(_device: &HostDevice, memory: &HostMemory, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_bounds(memory, offset, dst.len())?;
        // SAFETY: bounds checked above; no launch runs while the host reads (launches are synchronous).
        unsafe { std::ptr::copy_nonoverlapping(memory.ptr.as_ptr().add(offset), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn copy_device(
        _device: &HostDevice,
        _stream: &HostStream,
        dst: &mut HostMemory,
        dst_offset: usize,
        src: &HostMemory,
        src_offset: usize,
        bytes: usize,
    ) -> Result<()> {
        check_bounds(dst, dst_offset, bytes)?;
        check_bounds(src, src_offset, bytes)?;
        // SAFETY: both ranges lie inside their allocations (checked above); `dst` is borrowed
        // mutably and `src` shared, so they are different allocations and cannot overlap.
        // Launches are synchronous, so no kernel touches either meanwhile.
        unsafe {
            std::ptr::copy_nonoverlapping(src.ptr.as_ptr().add(src_offset), dst.ptr.as_ptr().add(dst_offset), bytes)
        };
        Ok(())
    }

    fn load_module(device: &HostDevice, name: &str, image: &'static [u8]) -> Result<HostModule> {
        Ok(HostModule(Arc::new(module::SlotPool::new(name, image, device.settings.max_resident_blocks)?)))
    }

    fn function(_device: &HostDevice, module: &HostModule, name: &str) -> Result<HostFunction> {
        module.0.check_kernel(name)?;
        Ok(HostFunction { module: module.0.clone(), name: name.to_owned() })
    }

    fn create_stream(_device: &HostDevice) -> Result<HostStream> {
        Ok(HostStream)
    }

    unsafe fn launch(
        device: &HostDevice,
        _stream: &HostStream,
        function: &HostFunction,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        launch::launch(&function.module, &function.name, config, args, &device.settings)
    }

    /// Launches run to completion before `launch` returns, with their errors.
    fn query(_device: &HostDevice, _stream: &HostStream) -> Result<bool> {
        Ok(true)
    }

    fn synchronize(_device: &HostDevice, _stream: &HostStream) -> Result<()> {
        Ok(())
    }

    fn record(_device: &HostDevice, _stream: &HostStream) -> Result<HostEvent> {
        Ok(HostEvent(Instant::now()))
    }

    fn elapsed(start: &HostEvent, end: &HostEvent) -> Result<Duration> {
        Ok(end.0.saturating_duration_since(start.0))
    }

    /// Launches run to completion before `launch` returns, so the work before any event has
    /// ended by the time it can be waited for.
    fn stream_wait_event(_device: &HostDevice, _stream: &HostStream, _event: &HostEvent) -> Result<()> {
        Ok(())
    }
}

fn check_bounds(memory: &HostMemory, offset: usize, len: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= memory.layout.size() => Ok(()),
        _ => Err(Error::InvalidArgument {
            call: "copy",
            reason: format!("bytes {offset}..+{len} of a {}-byte allocation", memory.layout.size()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use xbarrier_api::{Device, Error};

    use crate::Host;

    #[test]
    fn stream_copy_copies_whole_buffers_and_checks_lengths() {
        let device = Device::<Host>::open(0).expect("the host device");
        let stream = device.stream().expect("a stream");
        let data: Vec<u32> = (1..=1000).collect();
        let src = device.upload(&data).expect("upload");
        let mut dst = device.alloc::<u32>(1000).expect("alloc");
        stream.copy(&mut dst, &src).expect("copy");
        stream.synchronize().expect("synchronize");
        assert_eq!(dst.download().expect("download"), data);

        let mut short = device.alloc::<u32>(999).expect("alloc");
        match stream.copy(&mut short, &src) {
            Err(Error::InvalidArgument { call: "Stream::copy", reason }) => {
                assert!(reason.contains("1000") && reason.contains("999"), "{reason}")
            }
            other => panic!("expected InvalidArgument, got {:?}", other.err()),
        }
        let mut empty = device.alloc::<u32>(0).expect("alloc");
        stream.copy(&mut empty, &device.alloc::<u32>(0).expect("alloc")).expect("empty copy");
    }

    #[test]
    fn copy_device_checks_both_ranges() {
        use xbarrier_api::Backend;
        let device = Host::open(0).expect("the host device");
        let stream = Host::create_stream(&device).expect("a stream");
        let src = Host::alloc(&device, 64).expect("alloc");
        let mut dst = Host::alloc(&device, 32).expect("alloc");
        Host::write(&device, &mut dst, 0, &[5; 32]).expect("write");
        Host::copy_device(&device, &stream, &mut dst, 16, &src, 60, 4).expect("in bounds");
        let mut out = [0u8; 32];
        Host::read(&device, &dst, 0, &mut out).expect("read");
        assert_eq!(&out[15..21], &[5, 0, 0, 0, 0, 5]);
        for (dst_offset, src_offset) in [(29, 0), (0, 61), (usize::MAX, 0)] {
            let err = Host::copy_device(&device, &stream, &mut dst, dst_offset, &src, src_offset, 4)
                .expect_err("out of bounds");
            assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
        }
    }
}
