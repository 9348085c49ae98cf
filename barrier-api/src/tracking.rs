//! Which stream work a buffer is in flight on, so that nothing the host does to the buffer,
//! and no work of another stream, overlaps a kernel or copy that may still use it.
//!
//! A stream numbers the work it enqueues (tickets, counted after the runtime accepted the
//! work) and remembers the highest ticket a synchronize has seen finish. A buffer remembers
//! its last use per stream: the stream and the highest ticket. Before another stream uses the
//! buffer, or the host reads, writes or frees it, every unfinished use of another stream (of
//! any stream, for the host) is waited for by synchronizing that stream. This holds however the borrows a typed launch takes end, `std::mem::forget` of its
//! [`Launch`](crate::Launch) included.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::pending::{settle_launches, PendingLaunch};
use crate::{Backend, Result};

/// A stream's runtime handle and its progress, shared with the buffers its work uses.
pub(crate) struct StreamShared<B: Backend> {
    pub(crate) device: Arc<B::Device>,
    /// Launches since the last synchronize whose module or time limit it must check (dropped
    /// before the stream itself: they hold its events).
    pub(crate) pending: Mutex<Vec<PendingLaunch<B::Module, B::Event>>>,
    pub(crate) raw: B::Stream,
    /// Tickets handed out: the work enqueued so far.
    issued: AtomicU64,
    /// The highest ticket known finished.
    finished: AtomicU64,
    /// Work that failed, as ranges of tickets `(from, to]` with the error's text: host
    /// threads waiting on a barrier that work used give up on it (the last few are kept).
    failures: Mutex<Vec<(u64, u64, String)>>,
    /// A report read while settling an idle stream for a waiting host thread
    /// ([`failure_of`](Self::failure_of)), which the next synchronize returns.
    deferred: Mutex<Option<crate::Error>>,
    /// Settles in progress: launches taken out of `pending` whose reports are not recorded
    /// yet. While one runs, finished work may still turn out failed.
    settling: AtomicUsize,
}

impl<B: Backend> StreamShared<B> {
    pub(crate) fn new(device: Arc<B::Device>, raw: B::Stream) -> StreamShared<B> {
        StreamShared {
            device,
            pending: Mutex::new(Vec::new()),
            raw,
            issued: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            failures: Mutex::new(Vec::new()),
            deferred: Mutex::new(None),
            settling: AtomicUsize::new(0),
        }
    }

    /// The ticket of work the runtime has just accepted. Counted after the enqueue, so that a
    /// synchronize that reads the count has that work in its runtime call too.
    pub(crate) fn issue(&self) -> u64 {
        self.issued.fetch_add(1, Ordering::AcqRel) + 1
    }

    fn is_finished(&self, ticket: u64) -> bool {
        self.finished.load(Ordering::Acquire) >= ticket
    }

    /// Waits for the stream's work, leaving its reports (faults, timeouts) to
    /// [`synchronize`](Self::synchronize).
    pub(crate) fn wait(&self) -> Result<()> {
        let target = self.issued.load(Ordering::Acquire);
        B::synchronize(&self.device, &self.raw)?;
        self.finished.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Waits for the stream's work and reports what it left: a barrier fault, then a timeout.
    pub(crate) fn synchronize(&self) -> Result<()> {
        let from = self.finished.load(Ordering::Acquire);
        let target = self.issued.load(Ordering::Acquire);
        let taken = self.take_pending(&mut self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let result = self
            .wait()
            .and_then(|()| settle_launches(&taken.launches, |module| B::take_fault(&self.device, module), B::elapsed));
        if let Err(e) = &result {
            // The launches' own tickets too: a quiet wait may have moved `finished` past them.
            self.note_failure(from.min(taken.first), target.max(taken.last), e);
        }
        self.settling.fetch_sub(1, Ordering::AcqRel);
        // A report an idle settle read first is the older one.
        match self.deferred.lock().unwrap_or_else(PoisonError::into_inner).take() {
            Some(earlier) => Err(earlier),
            None => result,
        }
    }

    /// The launches to settle (`pending`, locked by the caller), counted in `settling` until
    /// the caller has recorded what they left.
    fn take_pending(&self, pending: &mut Vec<PendingLaunch<B::Module, B::Event>>) -> Taken<B> {
        self.settling.fetch_add(1, Ordering::AcqRel);
        let launches = std::mem::take(pending);
        let first = launches.iter().map(|p| p.tickets.0 - 1).min().unwrap_or(u64::MAX);
        let last = launches.iter().map(|p| p.tickets.1).max().unwrap_or(0);
        Taken { launches, first, last }
    }

    /// Whether work `ticket` has finished, its launches' reports are recorded, and none of
    /// them failed: nothing about it is left to learn.
    fn done_without_failure(&self, ticket: u64) -> bool {
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        self.is_finished(ticket)
            && pending.is_empty()
            && self.settling.load(Ordering::Acquire) == 0
            && self.recorded_failure(ticket).is_none()
    }

    /// Records that the work after ticket `from` up to ticket `to` failed with `error`.
    pub(crate) fn note_failure(&self, from: u64, to: u64, error: &crate::Error) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if failures.len() == 8 {
            failures.remove(0);
        }
        failures.push((from, to, error.to_string()));
    }

    fn recorded_failure(&self, ticket: u64) -> Option<String> {
        let failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.iter().rev().find(|(from, to, _)| *from < ticket && ticket <= *to).map(|(_, _, e)| e.clone())
    }

    /// Whether work `ticket` has failed, as far as can be told without waiting: an error a
    /// launch or synchronize reported for it; else, once the runtime says the stream has run
    /// everything ([`Backend::query`]), what its launches left (a checked kernel's fault
    /// ends the kernel normally: only its module's record tells), read now and kept for the
    /// next synchronize; else the runtime's error for a stream that broke.
    fn failure_of(&self, ticket: u64) -> Option<String> {
        if let Some(failure) = self.recorded_failure(ticket) {
            return Some(failure);
        }
        let unsettled = !self.pending.lock().unwrap_or_else(PoisonError::into_inner).is_empty();
        if self.is_finished(ticket) && !unsettled {
            return None;
        }
        let from = self.finished.load(Ordering::Acquire);
        let target = self.issued.load(Ordering::Acquire);
        match B::query(&self.device, &self.raw) {
            Err(e) => return Some(e.to_string()),
            Ok(false) => return None,
            // Idle, with nothing enqueued meanwhile: every launch up to `target` has ended.
            Ok(true) if self.issued.load(Ordering::Acquire) == target => {}
            Ok(true) => return None,
        }
        let taken = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            // A launch enqueued since `target` was read may not have run yet: look again later.
            if self.issued.load(Ordering::Acquire) != target {
                return None;
            }
            self.take_pending(&mut pending)
        };
        self.finished.fetch_max(target, Ordering::AcqRel);
        if let Err(e) = settle_launches(&taken.launches, |module| B::take_fault(&self.device, module), B::elapsed) {
            self.note_failure(from.min(taken.first), target.max(taken.last), &e);
            let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
            deferred.get_or_insert(e);
        }
        self.settling.fetch_sub(1, Ordering::AcqRel);
        self.recorded_failure(ticket)
    }
}

/// Launches taken out of a stream's `pending` to settle, and the tickets they answer for,
/// `(first, last]` (`first` is `u64::MAX` and `last` 0 when there were none).
struct Taken<B: Backend> {
    launches: Vec<PendingLaunch<B::Module, B::Event>>,
    first: u64,
    last: u64,
}

/// A buffer's last use by each stream that used it. One entry per stream, so that two
/// threads launching on two streams with the same buffer both stay recorded, and each entry
/// keeps the highest ticket, whatever order the threads record in.
pub(crate) struct InFlight<B: Backend> {
    uses: Mutex<Vec<(Arc<StreamShared<B>>, u64)>>,
    /// The error of a launch that was to use the buffer and failed before the runtime took
    /// it, or while it ran on a backend whose launches return at their end (the host's).
    failed_launch: Mutex<Option<String>>,
}

impl<B: Backend> InFlight<B> {
    pub(crate) fn new() -> InFlight<B> {
        InFlight { uses: Mutex::new(Vec::new()), failed_launch: Mutex::new(None) }
    }

    /// Records that a launch that was to use the buffer failed with `error`.
    pub(crate) fn launch_failed(&self, error: &crate::Error) {
        *self.failed_launch.lock().unwrap_or_else(PoisonError::into_inner) = Some(error.to_string());
    }

    /// Before `stream` enqueues work that uses the buffer: unfinished work of other streams
    /// that uses it is waited for (work of `stream` itself runs before, in stream order).
    pub(crate) fn before_use(&self, stream: &Arc<StreamShared<B>>) -> Result<()> {
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        for (other, ticket) in uses.iter() {
            if !Arc::ptr_eq(other, stream) && !other.is_finished(*ticket) {
                other.wait()?;
            }
        }
        uses.retain(|(other, ticket)| !other.is_finished(*ticket));
        Ok(())
    }

    /// Records that the work `ticket` of `stream` uses the buffer. Uses of other streams
    /// that are done without failure are forgotten, so that memory used concurrently (which
    /// no host access waits for) does not keep every stream that ever used it alive; a
    /// failed use stays, for [`failure`](Self::failure).
    pub(crate) fn used_by(&self, stream: &Arc<StreamShared<B>>, ticket: u64) {
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        uses.retain(|(other, last)| Arc::ptr_eq(other, stream) || !other.done_without_failure(*last));
        match uses.iter_mut().find(|(other, _)| Arc::ptr_eq(other, stream)) {
            Some((_, last)) => *last = (*last).max(ticket),
            None => uses.push((stream.clone(), ticket)),
        }
    }

    /// The error of a stream's work that used the buffer and failed, if any (without
    /// waiting): what a host thread waiting on a barrier in the buffer gives up with.
    pub(crate) fn failure(&self) -> Option<String> {
        if let Some(failed) = self.failed_launch.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Some(failed);
        }
        let uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        uses.iter().find_map(|(stream, ticket)| stream.failure_of(*ticket))
    }

    /// Before the host reads, writes or frees the buffer: every use is waited for.
    pub(crate) fn before_host_access(&self) -> Result<()> {
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        for (stream, ticket) in uses.iter() {
            if !stream.is_finished(*ticket) {
                stream.wait()?;
            }
        }
        uses.clear();
        Ok(())
    }
}
