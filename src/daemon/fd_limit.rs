//! The open-files limit. systemd gives a service a soft limit of 1024 file
//! descriptors, shared by every device, transcript, inotify watch and HTTP
//! connection of the daemon; the hard limit is usually far higher. The
//! daemon raises its soft limit to the hard one at start-up, and the HTTP
//! listener sizes its connection cap from what is then available.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises the soft open-files limit to the hard limit and returns the
/// limit now in force (the old one when raising failed, which is logged).
pub fn raise_to_hard() -> u64 {
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(limits) => limits,
        Err(e) => {
            tracing::warn!("cannot read the open-files limit: {e}");
            return FALLBACK;
        }
    };
    if soft >= hard {
        return soft;
    }
    match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
        Ok(()) => {
            tracing::info!("open-files limit raised from {soft} to {hard}");
            hard
        }
        Err(e) => {
            tracing::warn!("cannot raise the open-files limit from {soft} to {hard}: {e}");
            soft
        }
    }
}

/// The limit assumed when it cannot be read: systemd's default soft limit.
const FALLBACK: u64 = 1024;
