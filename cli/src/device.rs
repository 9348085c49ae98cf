//! The backend and device a command runs on (`--backend`), and the facts `xbar check` and
//! `xbar bench` print about it before their results, so that their output is the report a
//! GPU owner attaches to a bug: the device, its target and the kernel image's code objects,
//! the runtime's versions, the rate of the clock kernels count time with, the image variants
//! and whether device code is checked. A backend this build lacks, or a device that does not
//! open, is an error with a fix.

use std::fmt::Write as _;

use clap::ValueEnum;
use xbarrier::{
    visit_backends, Backend, BackendKind, BackendVisitor, Device, DeviceInfo, Error, KernelBundle, Variant,
};

/// The backends `--backend` chooses from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// CPU threads
    Host,
    /// NVIDIA GPUs (CUDA driver)
    Cuda,
    /// AMD GPUs (HIP runtime)
    Hip,
}

impl BackendArg {
    /// The backend it names.
    pub fn kind(self) -> BackendKind {
        match self {
            BackendArg::Host => BackendKind::Host,
            BackendArg::Cuda => BackendKind::Cuda,
            BackendArg::Hip => BackendKind::Hip,
        }
    }
}

/// `Err(message)` when this build lacks backend `kind`.
pub fn require_built(kind: BackendKind) -> Result<(), String> {
    if xbarrier::enabled_backends().contains(&kind) {
        Ok(())
    } else {
        Err(format!(
            "this xbar was built without the `{kind}` backend; rebuild it with `cargo build --release -p xbar --features {kind}`"
        ))
    }
}

/// What to do when device `ordinal` of `kind` did not open with `error`.
pub fn fix(kind: BackendKind, error: &Error) -> String {
    let host = if xbarrier::enabled_backends().contains(&BackendKind::Host) {
        "; `--backend host` runs on the CPU instead"
    } else {
        ""
    };
    let what = match (kind, error) {
        (BackendKind::Hip, Error::LibraryNotFound { .. }) => {
            "install ROCm's HIP runtime (libamdhip64), or set ROCM_PATH to where it is installed".to_owned()
        }
        (BackendKind::Hip, Error::NoDevice { .. }) => {
            "run on a machine with an AMD GPU; where there is one, check that \
             `rocminfo` lists it, that this user may open /dev/kfd and /dev/dri (groups video and render), and \
             HIP_VISIBLE_DEVICES"
                .to_owned()
        }
        (BackendKind::Cuda, Error::LibraryNotFound { .. } | Error::NoDevice { .. }) => {
            "run on a machine with an NVIDIA GPU and its driver (`nvidia-smi` lists them)".to_owned()
        }
        _ => "`xbar info` shows what the runtime sees; attach this output to a bug report".to_owned(),
    };
    format!("{what}{host}")
}

/// A device's facts: a title line and labelled lines.
pub struct Facts {
    /// `hip device 0: AMD Instinct MI300X`.
    pub title: String,
    /// Label and value, in print order.
    pub lines: Vec<(&'static str, String)>,
}

impl Facts {
    /// The title, then each line indented with its label aligned.
    pub fn render(&self) -> String {
        let width = self.lines.iter().map(|(label, _)| label.len()).max().unwrap_or(0) + 1;
        let mut text = format!("{}\n", self.title);
        for (label, value) in &self.lines {
            let _ = writeln!(text, "  {:<width$} {value}", format!("{label}:"), width = width);
        }
        text
    }
}

/// The kernel image a command runs: which bundle, and its variants for the device's backend.
pub struct Image<'a> {
    /// The bundle (`conformance`, `bench`).
    pub bundle: &'a KernelBundle,
    /// The variants that run, native first.
    pub variants: Vec<Variant>,
}

/// Opens device `ordinal` of backend `kind` (one of this build's).
struct Open {
    kind: BackendKind,
    ordinal: usize,
}

impl BackendVisitor for Open {
    type Output = Option<Result<DeviceInfo, Error>>;
    fn visit<B: Backend>(&mut self) -> Self::Output {
        (B::KIND == self.kind).then(|| Device::<B>::open(self.ordinal).map(|device| device.info().clone()))
    }
}

/// The facts of device `ordinal` of backend `kind` running `image`, or why it does not open.
pub fn facts(kind: BackendKind, ordinal: usize, image: &Image) -> Result<Facts, Error> {
    let opened = visit_backends(&mut Open { kind, ordinal }).into_iter().flatten().next();
    let info = opened.unwrap_or_else(|| {
        Err(Error::Unsupported { backend: kind, what: "this backend", reason: "not built into this xbar".to_owned() })
    })?;
    let mut lines = vec![("arch", info.arch.clone())];
    #[cfg(feature = "hip")]
    if kind == BackendKind::Hip {
        lines = hip::lines(ordinal, &info, image)?;
    }
    let variants: Vec<&str> = image.variants.iter().map(|v| v.name()).collect();
    let checked = if xbarrier::CHECKED {
        "checked device code (misuse and deadlocks reported as faults)"
    } else {
        "unchecked device code (release build)"
    };
    lines.push((
        "image",
        format!(
            "{} ({} variant{}); {checked}",
            image.bundle.name(),
            variants.join(", "),
            if variants.len() == 1 { "" } else { "s" }
        ),
    ));
    Ok(Facts { title: format!("{kind} device {ordinal}: {}", info.name), lines })
}

#[cfg(feature = "hip")]
mod hip {
    //! What the HIP runtime says beyond [`DeviceInfo`].

    use xbarrier::{BackendKind, Device, DeviceInfo, Error, Hip, Variant};
    use xbarrier_backend_hip::{code_object_targets, format_version};

    use super::Image;

    /// The processor of a target (`gfx90a` of `gfx90a:xnack-`).
    pub(super) fn processor(target: &str) -> &str {
        target.split_once(':').map_or(target, |(processor, _)| processor)
    }

    /// Which of `targets` (an image's code objects) is for processor `arch`: its own, else
    /// the generic ones whose family name is a prefix of it (`gfx11-generic` of `gfx1101`,
    /// `gfx10-3-generic` of `gfx1030`), which the runtime loads if they cover the processor.
    pub(super) fn verdict(targets: &[String], arch: &str) -> String {
        if let Some(own) = targets.iter().find(|t| processor(t) == arch) {
            return format!("matches the device: {own}");
        }
        let generic: Vec<&str> = targets
            .iter()
            .map(|t| processor(t))
            .filter(|t| t.strip_suffix("-generic").is_some_and(|family| arch.starts_with(&family.replace('-', ""))))
            .collect();
        let rebuild = format!("rebuild with XBAR_AMDGPU_TARGETS={arch}");
        if generic.is_empty() {
            format!("none for {arch}: hipModuleLoadData fails; {rebuild}")
        } else {
            format!(
                "none for {arch} itself; the runtime loads {} if it covers {arch}, else {rebuild}",
                generic.join(" or ")
            )
        }
    }

    /// The target line, the image's code objects and which one the device runs, the
    /// runtime's versions and the counter rate.
    pub fn lines(ordinal: usize, info: &DeviceInfo, image: &Image) -> Result<Vec<(&'static str, String)>, Error> {
        let device = Device::<Hip>::open(ordinal)?;
        let hip = device.raw();
        let mut lines = Vec::new();
        lines.push((
            "gfx target",
            match hip.gcn_arch_name() {
                Some(name) => format!("{} (gcnArchName {name})", info.arch),
                None => format!("{} (the runtime's device properties name none)", info.arch),
            },
        ));
        let default = image.variants.first().copied().unwrap_or(Variant::Default);
        let objects = match image.bundle.image_of(BackendKind::Hip, default).map(code_object_targets) {
            Ok(Some(targets)) => format!("{}; {}", targets.join(", "), verdict(&targets, &info.arch)),
            Ok(None) => "not listed (the image is not an uncompressed clang offload bundle)".to_owned(),
            Err(e) => format!("none: {e}"),
        };
        lines.push(("code objects", objects));
        let version = |v: Option<i32>, call: &str| match v {
            Some(v) => format!("{} ({call} {v})", format_version(v)),
            None => format!("unknown (the runtime has no {call})"),
        };
        lines.push((
            "HIP runtime",
            format!("{}, {}", version(hip.runtime_version(), "hipRuntimeGetVersion"), hip.library()),
        ));
        lines.push(("HIP driver", version(hip.driver_version(), "hipDriverGetVersion")));
        lines.push(("wall clock", hip.wall_clock().to_string()));
        Ok(lines)
    }
}

#[cfg(all(test, feature = "hip"))]
mod tests {
    use super::hip::verdict;

    #[test]
    fn the_code_object_for_the_device_is_named() {
        let targets: Vec<String> =
            ["gfx11-generic", "gfx1100", "gfx90a:xnack-", "gfx942", "gfx10-3-generic"].map(str::to_owned).to_vec();
        assert_eq!(verdict(&targets, "gfx90a"), "matches the device: gfx90a:xnack-");
        assert_eq!(verdict(&targets, "gfx1100"), "matches the device: gfx1100");
        let generic = verdict(&targets, "gfx1101");
        assert!(generic.starts_with("none for gfx1101 itself; the runtime loads gfx11-generic if"), "{generic}");
        assert!(verdict(&targets, "gfx1030").contains("loads gfx10-3-generic"));
        let none = verdict(&targets, "gfx1201");
        assert_eq!(none, "none for gfx1201: hipModuleLoadData fails; rebuild with XBAR_AMDGPU_TARGETS=gfx1201");
    }
}
