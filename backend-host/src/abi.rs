//! `repr(C)` mirrors of `xbarrier/host_abi.h`; the loader checks their sizes against the
//! kernel object's own (`xb_host_abi`) before the first call.

use std::ffi::c_void;
use std::sync::atomic::AtomicU32;

use xbarrier_api::FaultRecord;

/// `XB_HOST_ABI_VERSION`.
pub const HOST_ABI_VERSION: u32 = 2;
/// `XB_HOST_MAX_INT_ARGS`, `XB_HOST_MAX_FLOAT_ARGS`, `XB_HOST_MAX_STACK_ARGS`.
pub const MAX_INT_ARGS: usize = 6;
pub const MAX_FLOAT_ARGS: usize = 8;
pub const MAX_STACK_ARGS: usize = 10;

/// `xb_host_launch`: shared by every thread of a launch.
#[repr(C)]
pub struct LaunchRecord {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub wait_timeout_ns: u64,
    pub abort: AtomicU32,
    pub fault_claimed: AtomicU32,
    pub fault: FaultRecord,
    pub scheduler: *mut c_void,
    pub yield_fn: Option<unsafe extern "C" fn(*mut c_void)>,
    pub notify_fn: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// `xb_host_block`: one per running block.
#[repr(C)]
pub struct BlockRecord {
    pub index: [u32; 3],
    pub threads: u32,
    pub dynamic_shared: *mut u8,
    pub dynamic_shared_bytes: u64,
    pub syncthreads_word: u64,
}

/// `xb_host_thread`: one per kernel thread.
#[repr(C)]
pub struct ThreadRecord {
    pub launch: *mut LaunchRecord,
    pub block: *mut BlockRecord,
    pub fiber: *mut c_void,
    pub index: [u32; 3],
    pub linear: u32,
    /// Set by the kernel thread when it polls memory no publish announces (relax); read and
    /// cleared by the OS thread that resumes it.
    pub polled: u32,
}

/// The sizes `xb_host_abi` must report, in its order.
pub fn expected_sizes() -> [u64; 4] {
    [
        std::mem::size_of::<LaunchRecord>() as u64,
        std::mem::size_of::<BlockRecord>() as u64,
        std::mem::size_of::<ThreadRecord>() as u64,
        std::mem::size_of::<FaultRecord>() as u64,
    ]
}

/// `xb_host_abi`.
pub type AbiFn = unsafe extern "C" fn(*mut u64) -> u32;
/// `xb_host_set_current`.
pub type SetCurrentFn = unsafe extern "C" fn(*mut ThreadRecord);
/// `xb_host_block_init`.
pub type BlockInitFn = unsafe extern "C" fn(*mut BlockRecord);
/// `xb_host_invoke`.
pub type InvokeFn = unsafe extern "C" fn(*const c_void, *const u64, *const f64, *const u64) -> i32;
