//! Failed sign-ins, counted by client address: after [`MAX_FAILURES`] in
//! one [`WINDOW`], that address is answered `429` until the window ends,
//! so guessing tokens through the form goes no faster than that (the
//! secrets are compared in constant time besides). The table is bounded:
//! past [`MAX_ADDRESSES`] addresses, new ones share one overflow entry.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Failed sign-ins an address may make in one window.
pub const MAX_FAILURES: u32 = 10;
/// The window failures are counted in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Addresses tracked at once.
const MAX_ADDRESSES: usize = 4096;

/// Failures by address (`None`: the overflow entry), with the start of
/// their window.
type Counts = HashMap<Option<IpAddr>, (Instant, u32)>;

/// The failure counts. A cheap clonable handle.
#[derive(Clone, Default)]
pub struct Throttle {
    counts: Arc<Mutex<Counts>>,
}

impl Throttle {
    /// Whether `ip` may try to sign in now.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let now = Instant::now();
        let counts = crate::sync::lock(&self.counts);
        let entry = counts.get(&Some(ip)).or_else(|| {
            // An untracked address of a full table shares the overflow.
            (counts.len() >= MAX_ADDRESSES)
                .then(|| counts.get(&None))
                .flatten()
        });
        entry.is_none_or(|(since, n)| now.duration_since(*since) > WINDOW || *n < MAX_FAILURES)
    }

    /// Counts a failed sign-in from `ip`.
    pub fn failed(&self, ip: IpAddr) {
        let now = Instant::now();
        let mut counts = crate::sync::lock(&self.counts);
        if counts.len() >= MAX_ADDRESSES {
            counts.retain(|_, (since, _)| now.duration_since(*since) <= WINDOW);
        }
        let key = if counts.contains_key(&Some(ip)) || counts.len() < MAX_ADDRESSES {
            Some(ip)
        } else {
            None
        };
        let entry = counts.entry(key).or_insert((now, 0));
        if now.duration_since(entry.0) > WINDOW {
            *entry = (now, 0);
        }
        entry.1 += 1;
    }

    /// Forgets `ip`'s failures (it signed in).
    pub fn succeeded(&self, ip: IpAddr) {
        crate::sync::lock(&self.counts).remove(&Some(ip));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_held_after_its_failures_and_others_are_not() {
        let t = Throttle::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        for _ in 0..MAX_FAILURES {
            assert!(t.allows(a));
            t.failed(a);
        }
        assert!(!t.allows(a));
        assert!(t.allows(b));
        t.succeeded(a);
        assert!(t.allows(a));
    }
}
