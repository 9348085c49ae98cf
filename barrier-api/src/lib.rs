//! Vendor-neutral host side of xbarrier.
//!
//! A backend (CPU threads, CUDA, HIP) implements [`Backend`]; everything a program touches
//! is generic over it: [`Device`], typed [`Buffer`]s, [`Module`]s loaded from a
//! [`KernelBundle`] that the build helper produced, [`Kernel`]s looked up by name, and
//! [`Stream`]s that launch them. Every failure is one [`Error`], which keeps the native
//! error code and the failing call; a barrier misused inside a kernel comes back as
//! [`Error::Fault`] with a [`BarrierFault`] naming the operation, block and thread.
//!
//! Programs normally use these types through the `xbarrier` crate, which re-exports them and
//! adds the backends; what only backend implementations need is in [`backend`]. Code written
//! against this crate alone stays generic over [`Backend`]:
//!
//! ```
//! use xbarrier_api::{Backend, Device, Result};
//!
//! /// Doubles `data` on device 0 of any backend with the kernel `twice(float*, unsigned)`.
//! fn round_trip<B: Backend>(bundle: &xbarrier_api::KernelBundle, data: &[f32]) -> Result<Vec<f32>> {
//!     let device = Device::<B>::open(0)?;
//!     let kernel = device.load(bundle)?.kernel("twice")?;
//!     let buffer = device.upload(data)?;
//!     let stream = device.stream()?;
//!     let config = xbarrier_api::LaunchConfig::new(1, 256);
//!     // SAFETY: twice(float*, unsigned) takes these two; `buffer` outlives synchronize().
//!     unsafe { stream.launch(&kernel, &config, &[buffer.arg(), (data.len() as u32).into()])? };
//!     stream.synchronize()?;
//!     buffer.download()
//! }
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
mod bundle;
mod device;
mod error;
mod fault;
mod launch;
mod params;
mod peer;
mod pending;
mod system;
mod tracking;
mod typed;
mod variant;

pub use backend::{Backend, BackendKind, DeviceInfo};
pub use bundle::KernelBundle;
pub use device::{Buffer, Device, DeviceCopy, Event, Kernel, Module, Stream};
pub use error::{Error, Result};
pub use fault::{BarrierFault, BarrierOp, FaultKind, FaultRecord};
pub use launch::{Dim3, KernelArg, LaunchConfig};
pub use peer::{PeerBuffer, PeerPlacement};
pub use system::SystemBuffer;
pub use typed::{Launch, LaunchArg, MutPtrArg, PtrArg};
pub use variant::Variant;
