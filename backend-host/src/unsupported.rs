//! The host backend where it cannot run (anything but Linux on x86-64 and AArch64): the
//! types exist, so that code naming [`Host`] builds everywhere, but there is no device.
//! Every handle type is uninhabited: without a device none can be made.

use std::time::Duration;

use xbarrier_api::{Backend, BackendKind, DeviceInfo, Error, KernelArg, LaunchConfig, Result};

use crate::Host;

/// The one host device (none on this target).
pub enum HostDevice {}
/// A host allocation (none on this target).
pub enum HostMemory {}
/// A loaded module (none on this target).
pub enum HostModule {}
/// A kernel of a loaded module (none on this target).
#[derive(Clone)]
pub enum HostFunction {}
/// A stream (none on this target).
pub enum HostStream {}
/// A point in time (none on this target).
pub enum HostEvent {}

fn unsupported() -> Error {
    Error::Unsupported {
        backend: BackendKind::Host,
        what: "the host backend",
        reason: format!(
            "it runs kernels on Linux on x86-64 and AArch64 only, not on {}-{}; use a GPU backend (the `cuda` or `hip` feature)",
            std::env::consts::OS,
            std::env::consts::ARCH
        ),
    }
}

impl Backend for Host {
    const KIND: BackendKind = BackendKind::Host;
    type Device = HostDevice;
    type Memory = HostMemory;
    type Module = HostModule;
    type Function = HostFunction;
    type Stream = HostStream;
    type Event = HostEvent;

    fn device_count() -> Result<usize> {
        Err(unsupported())
    }
    fn open(_ordinal: usize) -> Result<HostDevice> {
        Err(unsupported())
    }
    fn info(device: &HostDevice) -> DeviceInfo {
        match *device {}
    }
    fn alloc(device: &HostDevice, _bytes: usize) -> Result<HostMemory> {
        match *device {}
    }
    fn address(memory: &HostMemory) -> u64 {
        match *memory {}
    }
    fn write(device: &HostDevice, _memory: &mut HostMemory, _offset: usize, _src: &[u8]) -> Result<()> {
        match *device {}
    }
    fn read(device: &HostDevice, _memory: &HostMemory, _offset: usize, _dst: &mut [u8]) -> Result<()> {
        match *device {}
    }
    fn copy_device(
        device: &HostDevice,
        _stream: &HostStream,
        _dst: &mut HostMemory,
        _dst_offset: usize,
        _src: &HostMemory,
        _src_offset: usize,
        _bytes: usize,
    ) -> Result<()> {
        match *device {}
    }
    fn load_module(device: &HostDevice, _name: &str, _image: &'static [u8]) -> Result<HostModule> {
        match *device {}
    }
    fn function(device: &HostDevice, _module: &HostModule, _name: &str) -> Result<HostFunction> {
        match *device {}
    }
    fn create_stream(device: &HostDevice) -> Result<HostStream> {
        match *device {}
    }
    unsafe fn launch(
        device: &HostDevice,
        _stream: &HostStream,
        _function: &HostFunction,
        _config: &LaunchConfig,
        _args: &[KernelArg],
    ) -> Result<()> {
        match *device {}
    }
    fn query(device: &HostDevice, _stream: &HostStream) -> Result<bool> {
        match *device {}
    }
    fn synchronize(device: &HostDevice, _stream: &HostStream) -> Result<()> {
        match *device {}
    }
    fn record(device: &HostDevice, _stream: &HostStream) -> Result<HostEvent> {
        match *device {}
    }
    fn elapsed(start: &HostEvent, _end: &HostEvent) -> Result<Duration> {
        match *start {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_is_no_device_and_the_error_says_why() {
        const { assert!(!crate::SUPPORTED) };
        for result in [Host::device_count().map(drop), Host::open(0).map(drop)] {
            match result {
                Err(e @ Error::Unsupported { backend: BackendKind::Host, .. }) => {
                    assert!(e.to_string().contains("Linux on x86-64 and AArch64"), "{e}")
                }
                other => panic!("expected Unsupported, got {other:?}"),
            }
        }
    }
}
