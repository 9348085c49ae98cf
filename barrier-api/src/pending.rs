//! What a [`Stream`](crate::Stream) remembers about its launches until `synchronize`, and
//! what `synchronize` then reports: a barrier fault that a module recorded
//! ([`Backend::take_fault`](crate::Backend::take_fault)), or a launch that ran past its
//! `LaunchConfig::timeout` on a backend that cannot abort kernels (the GPUs: the overrun is
//! reported once the stream has drained).

use std::sync::Arc;
use std::time::Duration;

use crate::{BarrierFault, Error, FaultRecord, Result};

/// One launch since the last synchronize. `M` is the backend's module, `E` its event.
pub(crate) struct PendingLaunch<M, E> {
    /// The kernel's name.
    pub(crate) kernel: Arc<str>,
    /// The module it came from (its fault record names this launch).
    pub(crate) module: Arc<M>,
    /// Events around the launch and its time limit, when it had one.
    pub(crate) timing: Option<(E, E, Duration)>,
    /// The stream tickets it answers for, first and last: its own, and those of the
    /// launches it replaced ([`note_launch`]), whose faults its module's record holds too.
    pub(crate) tickets: (u64, u64),
}

/// Remembers `launch` until the stream's next synchronize. Only the last untimed launch per
/// module matters (it names that module's fault), so the list stays short however many
/// launches precede a synchronize.
pub(crate) fn note_launch<M, E>(pending: &mut Vec<PendingLaunch<M, E>>, mut launch: PendingLaunch<M, E>) {
    if launch.timing.is_none() {
        let mut first = launch.tickets.0;
        pending.retain(|p| {
            let keep = p.timing.is_some() || !Arc::ptr_eq(&p.module, &launch.module);
            if !keep {
                first = first.min(p.tickets.0);
            }
            keep
        });
        launch.tickets.0 = first;
    }
    pending.push(launch);
}

/// Reports the launches of a drained stream: first a barrier fault (each module's record is
/// read once, `take_fault`, and named after that module's last launch), then the first
/// launch that ran past its limit (`elapsed` between its events).
pub(crate) fn settle_launches<M, E>(
    pending: &[PendingLaunch<M, E>],
    mut take_fault: impl FnMut(&M) -> Result<Option<FaultRecord>>,
    mut elapsed: impl FnMut(&E, &E) -> Result<Duration>,
) -> Result<()> {
    let mut fault = None;
    let mut seen: Vec<*const M> = Vec::new();
    for launch in pending.iter().rev() {
        let key = Arc::as_ptr(&launch.module);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        if let Some(record) = take_fault(&launch.module)? {
            fault.get_or_insert_with(|| BarrierFault::new(&launch.kernel, record));
        }
    }
    if let Some(fault) = fault {
        return Err(fault.into());
    }
    for launch in pending {
        if let Some((start, end, limit)) = &launch.timing {
            if elapsed(start, end)? > *limit {
                return Err(Error::LaunchTimeout { kernel: launch.kernel.to_string(), seconds: limit.as_secs_f64() });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_first_then_timeouts() {
        let (a, b) = (Arc::new(1u8), Arc::new(2u8));
        let launch = |kernel: &str, module: &Arc<u8>, timing| PendingLaunch {
            kernel: kernel.into(),
            module: module.clone(),
            timing,
            tickets: (1, 1),
        };
        let pending = [
            launch("k1", &a, Some((0u32, 5000u32, Duration::from_secs(1)))),
            launch("k2", &a, None),
            launch("k3", &b, None),
        ];
        let mut reads = Vec::new();
        let err = settle_launches(
            &pending,
            |m: &u8| {
                reads.push(*m);
                Ok((*m == 1).then(|| FaultRecord { kind: 3, op: 2, ..Default::default() }))
            },
            |s: &u32, e: &u32| Ok(Duration::from_millis(u64::from(e - s))),
        )
        .expect_err("module 1 faulted");
        assert!(matches!(&err, Error::Fault(f) if f.kernel == "k2"), "{err}");
        assert_eq!(reads, [2, 1], "each module read once, newest launch first");
        let timed_out = settle_launches(
            &pending,
            |_: &u8| Ok(None),
            |s: &u32, e: &u32| Ok(Duration::from_millis(u64::from(e - s))),
        );
        assert!(matches!(timed_out, Err(Error::LaunchTimeout { ref kernel, .. }) if kernel == "k1"));
        assert!(settle_launches(&pending[1..], |_: &u8| Ok(None), |_: &u32, _: &u32| Ok(Duration::ZERO)).is_ok());
    }

    #[test]
    fn keeps_timed_launches_and_the_last_untimed_per_module() {
        let (a, b) = (Arc::new(1u8), Arc::new(2u8));
        let mut pending = Vec::new();
        for (ticket, (kernel, module, timing)) in
            [("k1", &a, None), ("t1", &a, Some((0u32, 1u32, Duration::ZERO))), ("k2", &b, None), ("k3", &a, None)]
                .into_iter()
                .enumerate()
        {
            let ticket = ticket as u64 + 1;
            let tickets = (ticket, ticket);
            note_launch(&mut pending, PendingLaunch { kernel: kernel.into(), module: module.clone(), timing, tickets });
        }
        let kernels: Vec<&str> = pending.iter().map(|p| &*p.kernel).collect();
        assert_eq!(kernels, ["t1", "k2", "k3"]);
        // k3 answers for k1, which it replaced (the same module's record holds both).
        let tickets: Vec<(u64, u64)> = pending.iter().map(|p| p.tickets).collect();
        assert_eq!(tickets, [(2, 2), (3, 3), (1, 4)]);
    }
}
