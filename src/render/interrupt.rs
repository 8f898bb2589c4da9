//! Stopping a render on SIGINT, SIGTERM or SIGHUP without leaving part of a report set behind.
//!
//! The signal handler only records which signal came; the render checks that record between
//! its steps and while typst runs, kills typst's process group, removes its temporary folder
//! and returns [`Interrupted`]. Nothing else runs inside the handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The signal a render was asked to stop by, shared with the signal handlers; a default one is
/// never raised (library callers and tests).
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicUsize>);

/// The signals that stop a render.
#[cfg(unix)]
const SIGNALS: &[i32] =
    &[signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP];
#[cfg(not(unix))]
const SIGNALS: &[i32] = &[signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];

impl Interrupt {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on, for the rest of the process: each only
    /// records itself here, so the render decides where to stop.
    pub fn catch() -> std::io::Result<Interrupt> {
        let i = Interrupt::default();
        for &sig in SIGNALS {
            let value = usize::try_from(sig).unwrap_or(usize::MAX);
            signal_hook::flag::register_usize(sig, Arc::clone(&i.0), value)?;
        }
        Ok(i)
    }

    /// The last signal that came, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            s => Some(i32::try_from(s).unwrap_or(i32::MAX)),
        }
    }

    /// `Err` once a signal came: the caller stops and cleans up.
    pub fn check(&self) -> Result<(), Interrupted> {
        match self.signal() {
            None => Ok(()),
            Some(signal) => Err(Interrupted { signal }),
        }
    }
}

/// A render stopped by a signal; its temporary folder is gone and typst was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by {}", signal_name(*signal))]
pub struct Interrupted {
    /// The signal's number.
    pub signal: i32,
}

/// `SIGTERM`, or the number of a signal without a name here.
pub fn signal_name(signal: i32) -> String {
    signal_hook::low_level::signal_name(signal)
        .map_or_else(|| format!("signal {signal}"), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_interrupt_is_never_raised_and_names_its_signal_once_raised() {
        let i = Interrupt::default();
        assert_eq!(i.check(), Ok(()));
        i.0.store(15, Ordering::SeqCst);
        let e = i.check().unwrap_err();
        assert_eq!(e.signal, 15);
        #[cfg(unix)]
        assert_eq!(e.to_string(), "interrupted by SIGTERM");
    }
}
