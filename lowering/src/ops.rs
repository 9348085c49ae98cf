//! The operations, each a kernel `xbl_<name>` of `hip-src/kernels/lowering/ops.cpp`.

use std::fmt;

/// The source compiled for every target (embedded, so `xbar lower` works from anywhere).
pub const OPS_SOURCE: &str = include_str!("../../hip-src/kernels/lowering/ops.cpp");

/// A barrier operation as one kernel performs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `init(&bar, count)`
    Init,
    /// `bar.arrive()`
    Arrive,
    /// `bar.wait(token)`
    Wait,
    /// `bar.arrive_and_wait()`
    ArriveAndWait,
    /// `barrier_arrive_tx(bar, 1, bytes)`
    ArriveTx,
    /// `barrier_expect_tx(bar, bytes)`
    ExpectTx,
    /// `memcpy_async_tx(dst, src, aligned_size_t<16>(bytes), bar)`
    MemcpyAsyncTx,
    /// `bar.arrive_and_drop()`
    ArriveAndDrop,
    /// `bar.arrive_and_wait()` on a barrier with a completion function
    CompletionArriveAndWait,
    /// `membar_cta()`
    FenceCta,
    /// `membar_gl()`
    FenceGl,
    /// `membar_sys()`
    FenceSys,
    /// `__syncthreads()`: the hardware workgroup barrier, for comparison
    Syncthreads,
}

impl Op {
    /// Every operation, in table order.
    pub const ALL: [Op; 13] = [
        Op::Init,
        Op::Arrive,
        Op::Wait,
        Op::ArriveAndWait,
        Op::ArriveTx,
        Op::ExpectTx,
        Op::MemcpyAsyncTx,
        Op::ArriveAndDrop,
        Op::CompletionArriveAndWait,
        Op::FenceCta,
        Op::FenceGl,
        Op::FenceSys,
        Op::Syncthreads,
    ];

    /// The name on the command line and in the kernel's name (`arrive_tx`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Init => "init",
            Op::Arrive => "arrive",
            Op::Wait => "wait",
            Op::ArriveAndWait => "arrive_and_wait",
            Op::ArriveTx => "arrive_tx",
            Op::ExpectTx => "expect_tx",
            Op::MemcpyAsyncTx => "memcpy_async_tx",
            Op::ArriveAndDrop => "arrive_and_drop",
            Op::CompletionArriveAndWait => "completion_arrive_and_wait",
            Op::FenceCta => "fence_cta",
            Op::FenceGl => "fence_gl",
            Op::FenceSys => "fence_sys",
            Op::Syncthreads => "syncthreads",
        }
    }

    /// The operation with that [`name`](Self::name), if any.
    pub fn from_name(name: &str) -> Option<Op> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Whether it arrives and then waits on its own token: the operations whose
    /// [fast path](crate::FastPath) is defined.
    pub fn is_round_trip(self) -> bool {
        matches!(self, Op::ArriveAndWait | Op::CompletionArriveAndWait)
    }

    /// The kernel that performs it.
    pub fn kernel(self) -> String {
        format!("xbl_{}", self.name())
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
