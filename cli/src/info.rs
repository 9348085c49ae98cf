//! `xbar info`: backends, devices and toolchains.

use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;

use xbarrier::{visit_backends, Backend, BackendKind, BackendVisitor, Device, DeviceInfo};

use crate::output::emit;
use crate::toolchains;

/// What one backend said about its devices.
struct BackendReport {
    kind: BackendKind,
    /// The devices (each opened, or why not), or why the backend has none.
    devices: Result<Vec<Result<DeviceInfo, String>>, String>,
}

/// Counts and opens every device of each enabled backend.
struct Probe;

impl BackendVisitor for Probe {
    type Output = BackendReport;

    fn visit<B: Backend>(&mut self) -> BackendReport {
        // A backend that panics while probing is reported like one that failed.
        let devices = panic::catch_unwind(AssertUnwindSafe(|| {
            Device::<B>::count().map_err(|e| e.to_string()).map(|count| {
                (0..count)
                    .map(|ordinal| Device::<B>::open(ordinal).map(|d| d.info().clone()).map_err(|e| e.to_string()))
                    .collect()
            })
        }))
        .unwrap_or_else(|payload| Err(format!("the backend panicked while probing: {}", panic_text(payload.as_ref()))));
        BackendReport { kind: B::KIND, devices }
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}

/// Runs `xbar info`.
pub fn run() -> ExitCode {
    let mut out = String::new();
    let _ = writeln!(out, "xbar {}", env!("CARGO_PKG_VERSION"));

    let enabled = xbarrier::enabled_backends();
    let names: Vec<&str> = enabled.iter().map(|k| k.name()).collect();
    let _ =
        writeln!(out, "enabled backends: {}", if names.is_empty() { "(none)".to_owned() } else { names.join(", ") });
    let all: Vec<&str> = BackendKind::ALL.iter().map(|k| k.name()).filter(|n| !names.contains(n)).collect();
    if !all.is_empty() {
        let _ = writeln!(out, "  (not built in: {}; enable with `--features {}`)", all.join(", "), all.join(","));
    }
    let _ = writeln!(
        out,
        "checked device code: {}",
        if xbarrier::CHECKED {
            "yes (misuse and deadlocks are reported as faults)"
        } else {
            "no (release build: misuse is undefined behaviour; build in debug or with `--features checked`)"
        }
    );

    for report in visit_backends(&mut Probe) {
        out.push('\n');
        match &report.devices {
            Err(error) => {
                let _ = writeln!(out, "{} backend: no devices: {error}", report.kind);
            }
            Ok(devices) if devices.is_empty() => {
                let _ = writeln!(out, "{} backend: 0 devices", report.kind);
            }
            Ok(devices) => {
                let _ = writeln!(
                    out,
                    "{} backend: {} device{}",
                    report.kind,
                    devices.len(),
                    if devices.len() == 1 { "" } else { "s" }
                );
                for (ordinal, device) in devices.iter().enumerate() {
                    match device {
                        Ok(info) => describe(&mut out, info),
                        Err(error) => {
                            let _ = writeln!(out, "  device {ordinal}: cannot open: {error}");
                        }
                    }
                }
            }
        }
    }

    out.push_str("\ntoolchains:\n");
    for report in toolchains::probe_all() {
        out.push_str(&report.render());
    }
    let _ = writeln!(out, "({} in the xbarrier repository installs the project's toolchains)", toolchains::INSTALLER);
    emit(&out, ExitCode::SUCCESS)
}

fn describe(out: &mut String, info: &DeviceInfo) {
    let _ = writeln!(out, "  device {}: {}", info.ordinal, info.name);
    let _ = writeln!(out, "    arch:                      {}", info.arch);
    let _ = writeln!(out, "    wave size:                 {}", info.wave_size);
    let _ = writeln!(out, "    multiprocessors:           {}", info.multiprocessors);
    let _ = writeln!(out, "    max cooperative blocks:    {}", info.max_cooperative_blocks);
    let _ = writeln!(out, "    max threads per block:     {}", info.max_threads_per_block);
    let _ = writeln!(
        out,
        "    max dynamic shared memory: {} bytes ({} KiB)",
        info.max_dynamic_shared_bytes,
        info.max_dynamic_shared_bytes / 1024
    );
}
