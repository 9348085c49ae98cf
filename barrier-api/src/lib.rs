//! Vendor-neutral host side of xbarrier.
//!
//! A backend (CPU threads, CUDA, HIP) implements [`Backend`]; everything a program touches
//! is generic over it: [`Device`], typed [`Buffer`]s, [`Module`]s loaded from a
//! [`KernelBundle`] that the build helper produced, [`Kernel`]s looked up by name, and
//! [`Stream`]s that launch them. Every failure is one [`Error`], which keeps the native
//! error code and the failing call; a barrier misused inside a kernel comes back as
//! [`Error::Fault`] with a [`BarrierFault`] naming the operation, block and thread.
#![deny(unsafe_code)]

mod backend;
mod bundle;
mod device;
mod error;
mod fault;
mod launch;
mod params;
mod pending;
mod variant;

pub use backend::{Backend, BackendKind, DeviceInfo};
pub use bundle::{KernelBundle, BUNDLE_MAGIC};
pub use device::{Buffer, Device, DeviceCopy, Event, Kernel, Module, Stream};
pub use error::{Error, Result};
pub use fault::{BarrierFault, BarrierOp, FaultKind, FaultRecord};
pub use launch::{Dim3, KernelArg, LaunchConfig};
pub use params::KernelParams;
pub use pending::{note_launch, settle_launches, PendingLaunch};
pub use variant::Variant;
