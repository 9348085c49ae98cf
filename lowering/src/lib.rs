//! What each barrier operation becomes on a GPU target: compiles
//! `hip-src/kernels/lowering/ops.cpp` (one kernel `xbl_<op>` per operation) with the
//! target's compiler and reads back each kernel's machine instructions and intermediate
//! code. The lowering tests assert on it; `xbar lower` prints it.

mod amd;
pub mod fast_path;
pub mod memory_model;
mod nvidia;
mod ops;

use std::fmt;

pub use fast_path::FastPath;
pub use nvidia::ptx_entry;
pub use ops::{Op, OPS_SOURCE};
pub use xbarrier::Variant;

/// A GPU target the operations can be compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// NVIDIA Ampere (mbarrier without tx-count: the protocol carries tx).
    Sm80,
    /// NVIDIA Hopper (mbarrier with tx-count and bulk copies).
    Sm90,
    /// AMD CDNA2 (MI200), wave64.
    Gfx90a,
    /// AMD CDNA3 (MI300), wave64.
    Gfx942,
    /// AMD CDNA4 (MI350), wave64; needs clang 22.
    Gfx950,
    /// AMD RDNA3, wave32.
    Gfx1100,
    /// AMD RDNA4, wave32 (split barrier instructions, scoped cache operations).
    Gfx1200,
    /// AMD gfx1250, wave32; needs clang 22.
    Gfx1250,
    /// Any other AMDGPU target ID (`gfx1101`, `gfx11-generic`, `gfx90a:xnack+`): compiled by
    /// the first AMD compiler that knows its processor (see [`Lowering::compile`]).
    Amd(AmdTargetName),
}

/// The target ID of [`Target::Amd`], kept inline so that [`Target`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AmdTargetName {
    bytes: [u8; AmdTargetName::CAPACITY],
    len: u8,
}

impl AmdTargetName {
    /// The longest target ID it holds (`gfx942:sramecc+:xnack-` has 22 bytes).
    pub const CAPACITY: usize = 47;

    /// The target ID as written.
    pub fn as_str(&self) -> &str {
        // Built from a &str in `Target::from_name`, cut at its end: valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Debug for AmdTargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl Target {
    /// The targets whose lowering the tests assert on, in the order tables list them.
    pub const ALL: [Target; 8] = [
        Target::Sm90,
        Target::Sm80,
        Target::Gfx90a,
        Target::Gfx942,
        Target::Gfx950,
        Target::Gfx1100,
        Target::Gfx1200,
        Target::Gfx1250,
    ];

    /// The name used on the command line and in tables (`sm_90`, `gfx942`, `gfx11-generic`).
    pub fn name(&self) -> &str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
            Target::Gfx950 => "gfx950",
            Target::Gfx1100 => "gfx1100",
            Target::Gfx1200 => "gfx1200",
            Target::Gfx1250 => "gfx1250",
            Target::Amd(name) => name.as_str(),
        }
    }

    /// Whether this is an AMDGPU target (one image: the protocol; no emulated variant).
    pub fn is_amd(&self) -> bool {
        !matches!(self, Target::Sm80 | Target::Sm90)
    }

    /// Whether compiling for it needs clang 22 (clang-19 rejects the target). For
    /// [`Target::Amd`] the compilers are asked instead.
    pub fn needs_clang_22(&self) -> bool {
        matches!(self, Target::Gfx950 | Target::Gfx1250)
    }

    /// The target with that name: one of [`Target::ALL`], or any other well-formed AMDGPU
    /// target ID (`gfx` and a processor, optional `:feature+`/`:feature-`) as
    /// [`Target::Amd`]; whether a compiler knows it shows when compiling.
    pub fn from_name(name: &str) -> Option<Target> {
        if let Some(known) = Self::ALL.into_iter().find(|t| t.name() == name) {
            return Some(known);
        }
        let id = xbarrier_build::AmdgpuTarget::parse(name).ok()?;
        let canonical = id.to_string();
        if !canonical.starts_with("gfx") || canonical.len() > AmdTargetName::CAPACITY {
            return None;
        }
        let mut bytes = [0u8; AmdTargetName::CAPACITY];
        bytes[..canonical.len()].copy_from_slice(canonical.as_bytes());
        let len = u8::try_from(canonical.len()).ok()?;
        Some(Target::Amd(AmdTargetName { bytes, len }))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a lowering could not be produced.
#[derive(Debug)]
pub struct LowerError {
    message: String,
}

impl LowerError {
    pub(crate) fn new(message: impl Into<String>) -> LowerError {
        LowerError { message: message.into() }
    }
}

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LowerError {}

/// One operation's code on one target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpCode {
    /// Machine instructions, one per entry, without addresses or encodings (SASS on NVIDIA).
    pub instructions: Vec<String>,
    /// The intermediate code of the kernel (PTX on NVIDIA; the annotated assembly on AMD).
    pub intermediate: String,
    /// Bytes of per-thread scratch (private segment) the kernel needs, where the target's
    /// compiler reports it (AMDGPU); `None` elsewhere.
    pub scratch_bytes: Option<u64>,
    /// The fast path of a round trip ([`Op::is_round_trip`]): a non-last arrival whose first
    /// poll succeeds (see [`fast_path`]); `None` for the other operations, or where the
    /// listing has no such path.
    pub fast_path: Option<FastPath>,
    /// On AMD targets, the round trip of the wave whose leader completes the phase
    /// ([`fast_path::amd_completer`]); `None` elsewhere.
    pub completer: Option<FastPath>,
    /// On AMD targets, the round trip of the wave whose arrival is its phase's first and arms
    /// it ([`fast_path::amd_arming`]; the direct layouts); `None` elsewhere.
    pub arming: Option<FastPath>,
    /// On AMD targets, one poll of the round trip's wait loop at its longest sleep
    /// ([`fast_path::amd_sleeping_poll`]); `None` elsewhere.
    pub sleeping_poll: Option<FastPath>,
}

impl OpCode {
    /// The instructions whose mnemonic (first word, predicate stripped) starts with `prefix`.
    pub fn matching<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.instructions.iter().filter(move |i| mnemonic(i).starts_with(prefix))
    }
    /// Whether any instruction's mnemonic starts with `prefix`.
    pub fn has(&self, prefix: &str) -> bool {
        self.matching(prefix).next().is_some()
    }
    /// Whether any whole instruction (mnemonic and operands) starts with `text`.
    pub fn has_instruction(&self, text: &str) -> bool {
        self.instructions.iter().any(|i| i.starts_with(text))
    }
}

/// The mnemonic of an instruction line: `@P0 SYNCS.ARRIVE.TRANS64 R2, [UR4]` -> `SYNCS.ARRIVE.TRANS64`.
pub fn mnemonic(instruction: &str) -> &str {
    instruction.split_whitespace().find(|w| !w.starts_with('@')).unwrap_or("")
}

/// Every operation's code for one target, variant and build mode.
#[derive(Clone, Debug)]
pub struct Lowering {
    /// The target compiled for.
    pub target: Target,
    /// The image variant (default, emulated or grouped).
    pub variant: Variant,
    /// Whether the code is checked (checked builds run the protocol everywhere).
    pub checked: bool,
    ops: Vec<(Op, OpCode)>,
}

impl Lowering {
    /// Compiles every operation for `target` in `variant`. AMD targets use `$HIP_CLANG`
    /// (else clang-19), or clang 22 where the target needs it; a [`Target::Amd`] the first
    /// compiler does not know goes to clang 22, and one neither knows is an error naming
    /// the processors the first one knows.
    pub fn compile(target: Target, variant: Variant, checked: bool) -> Result<Lowering, LowerError> {
        let ops = if target.is_amd() {
            amd::compile(target, checked)?
        } else {
            nvidia::compile(target, variant, checked, false)?
        };
        Ok(Lowering { target, variant, checked, ops })
    }

    /// Compiles every operation as the checked code built for compute-sanitizer
    /// (`XBAR_SANITIZER=1`: on sm_90 the checked engine with its shadow mbarriers), for an
    /// NVIDIA `target`, default variant.
    pub fn compile_sanitizer(target: Target) -> Result<Lowering, LowerError> {
        if target.is_amd() {
            return Err(LowerError::new(format!("{target}: sanitizer builds are CUDA's (compute-sanitizer)")));
        }
        let ops = nvidia::compile(target, Variant::Default, true, true)?;
        Ok(Lowering { target, variant: Variant::Default, checked: true, ops })
    }

    /// The code of `op`.
    pub fn op(&self, op: Op) -> &OpCode {
        self.ops.iter().find(|(o, _)| *o == op).map(|(_, c)| c).unwrap_or_else(|| {
            // `compile` fails unless every Op's kernel was found, so this cannot be reached.
            unreachable!("lowering of {op} is missing")
        })
    }
}
