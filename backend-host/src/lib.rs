//! xbarrier's CPU backend.
//!
//! Kernels are the same C++ sources as for the GPUs, compiled by the host C++ compiler into
//! a shared object (the build helper does it). A launch runs the grid's blocks on CPU
//! threads: every kernel thread is a fiber, each block runs on a few OS threads so that
//! its threads race on the barrier protocol's atomics for real, and every running block has
//! its own static and dynamic shared memory (a block slot is a separate copy of the object).
//!
//! Supported: Linux on x86-64 and AArch64 (the argument passing in `args.rs` follows their
//! C calling conventions, and kernel objects are ELF shared objects). Elsewhere the crate
//! still builds, so that a program using only the GPU backends builds with xbarrier's
//! default features on macOS or Windows: [`Host`] is there, but [`SUPPORTED`] is `false` and
//! [`Backend::device_count`](xbarrier_api::Backend::device_count) and
//! [`Backend::open`](xbarrier_api::Backend::open) return [`Error::Unsupported`](xbarrier_api::Error::Unsupported).
//!
//! Tuning comes from the environment ([`Settings`]: `XBAR_HOST_WORKERS_PER_BLOCK`,
//! `XBAR_HOST_CONCURRENT_BLOCKS`, `XBAR_HOST_MAX_RESIDENT_BLOCKS`, `XBAR_HOST_STACK_KB`,
//! `XBAR_WAIT_TIMEOUT_MS`, `XBAR_HOST_DEVICES`). A launch runs to completion before
//! [`Backend::launch`](xbarrier_api::Backend::launch) returns.
//!
//! # Example
//! The host offers two devices by default (`XBAR_HOST_DEVICES`), stand-ins for the GPUs of
//! one machine that share the CPU's cores; their buffers are host memory:
//!
//! ```
//! # if !xbarrier_backend_host::SUPPORTED { return Ok::<(), xbarrier_api::Error>(()); }
//! use xbarrier_api::{Device, Error};
//! use xbarrier_backend_host::Host;
//!
//! let device = Device::<Host>::open(0)?;
//! assert_eq!(Device::<Host>::count()?, 2);
//! assert!(matches!(Device::<Host>::open(2), Err(Error::NoDevice { found: 2, .. })));
//!
//! let src = device.upload(&[1.5f32, 2.5, 3.5])?;
//! let mut dst = device.alloc::<f32>(3)?; // zero-filled
//! assert_eq!(dst.download()?, [0.0; 3]);
//! let stream = device.stream()?;
//! stream.copy(&mut dst, &src)?;
//! stream.synchronize()?;
//! assert_eq!(dst.download()?, [1.5, 2.5, 3.5]);
//! # Ok::<(), Error>(())
//! ```
#![warn(missing_docs)]

mod settings;

pub use settings::Settings;

/// Whether this target runs the host backend: Linux on x86-64 or AArch64.
pub const SUPPORTED: bool = cfg!(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")));

/// The CPU backend.
pub struct Host;

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod abi;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod args;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod backend;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod launch;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod module;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod scheduler;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub use backend::{HostDevice, HostEvent, HostFunction, HostMemory, HostModule, HostStream};

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod unsupported;
#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
pub use unsupported::{HostDevice, HostEvent, HostFunction, HostMemory, HostModule, HostStream};
