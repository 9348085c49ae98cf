//! Which lowering of the barrier API a kernel image carries.

use std::fmt;

/// Which of a module's images to load ([`Device::load_variant`](crate::Device::load_variant)).
///
/// Every bundle carries a [`Default`](Variant::Default) image for each backend it was built
/// for, and [`Device::load`](crate::Device::load) loads it: the best lowering the target and
/// the build allow. That is the `mbarrier` hardware for block-scope barriers in shared
/// memory on NVIDIA sm_90 and later in unchecked builds (arrivals, waits, tx-count and bulk
/// copies), and the portable protocol everywhere else: on the host, on AMD GPUs, on older
/// NVIDIA GPUs, and in checked builds (the hardware traps on misuse instead of reporting it).
///
/// Unchecked CUDA builds also carry an [`Emulated`](Variant::Emulated) image: the portable
/// protocol on sm_90 too, the exact code AMD GPUs and the host run, for comparing the two
/// lowerings on one GPU. No other backend has one.
///
/// ```
/// use xbarrier_api::Variant;
/// assert_eq!(Variant::from_name("emulated"), Some(Variant::Emulated));
/// assert_eq!(Variant::default(), Variant::Default);
/// assert_eq!(Variant::Default.to_string(), "default");
/// assert_eq!(Variant::from_name("mbarrier"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// The best lowering the target and build allow (what [`Device::load`](crate::Device::load) loads).
    #[default]
    Default,
    /// CUDA, unchecked builds: the portable protocol instead of the `mbarrier` hardware.
    Emulated,
}

impl Variant {
    /// Both variants, [`Default`](Variant::Default) first.
    pub const ALL: [Variant; 2] = [Variant::Default, Variant::Emulated];

    /// The lower-case name used in test names, messages and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Default => "default",
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
            Variant::Default => 0,
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
