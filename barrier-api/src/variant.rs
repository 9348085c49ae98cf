//! Which lowering of the barrier API a kernel image carries.

use std::fmt;

/// The lowering a module's image was compiled with, chosen when the module is loaded
/// ([`Device::load_variant`](crate::Device::load_variant)).
///
/// On CUDA an unchecked build carries both: `Native` lowers block-scope barriers in shared
/// memory to the `mbarrier` hardware (sm_90: arrivals, waits, tx-count and bulk copies), and
/// `Emulated` runs the portable protocol, the exact code AMD GPUs and the host run, on the
/// CUDA platform layer. Checked builds run the protocol everywhere (the hardware traps on
/// misuse instead of reporting it), so they carry only `Native`. The host and HIP backends
/// always run the protocol, so their one image is `Native`.
///
/// ```
/// use xbarrier_api::Variant;
/// assert_eq!(Variant::from_name("emulated"), Some(Variant::Emulated));
/// assert_eq!(Variant::default().to_string(), "native");
/// assert_eq!(Variant::from_name("mbarrier"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// The best lowering the target and build allow.
    #[default]
    Native,
    /// The portable protocol on the target's platform layer.
    Emulated,
}

impl Variant {
    /// Both variants, native first.
    pub const ALL: [Variant; 2] = [Variant::Native, Variant::Emulated];

    /// The lower-case name used in bundles, test names and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Native => "native",
            Variant::Emulated => "emulated",
        }
    }

    /// The variant with that [`name`](Self::name), if any.
    pub fn from_name(name: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The number that tags an image of this variant inside a bundle entry's code.
    pub(crate) fn code(self) -> u32 {
        match self {
            Variant::Native => 0,
            Variant::Emulated => 1,
        }
    }

    pub(crate) fn from_code(code: u32) -> Option<Variant> {
        Self::ALL.into_iter().find(|v| v.code() == code)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
