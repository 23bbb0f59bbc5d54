//! Failed authentications, counted by source, for every door of the HTTP
//! listener that compares a secret: the web view's sign-in form, the
//! bearer token of `/mcp` and `/metrics`, and the bearer token of the
//! console WebSockets. One [`Throttle`] is shared by all of them, so a
//! guesser gains nothing by spreading its guesses over the doors.
//!
//! A source is an IPv4 address or an IPv6 `/64` (one host is usually
//! given a whole `/64`, and could otherwise rotate through it). Each
//! failure adds [`DECAY`] to the source's debt, and the debt runs down
//! with time only: a source may fail [`MAX_FAILURES`] times in a row, then
//! once more every [`DECAY`], that is [`MAX_FAILURES`] in [`WINDOW`]. A
//! success clears nothing: a guesser who holds a valid (say, read-only)
//! token cannot wipe its own failures by using it.
//!
//! A held source may still present a long secret
//! ([`crate::config::LONG_SECRET_BYTES`]): each door compares it with the
//! long secrets only, so the hold stops guessing at short secrets without
//! keeping out an engineer whose address a guesser shares.
//!
//! The table is bounded ([`MAX_SOURCES`]); when it is full, a new source
//! takes the place of the entry whose debt ends soonest, so a full table
//! never makes sources share one count, and a source that failed nothing
//! is never held by others' failures.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::config::LONG_SECRET_BYTES;

/// Failures a source may make in a row before it is held.
pub const MAX_FAILURES: u32 = 10;
/// The time [`MAX_FAILURES`] failures take to be forgotten.
pub const WINDOW: Duration = Duration::from_secs(60);
/// How much of a source's debt one failure is, and how long it takes to
/// run down.
pub const DECAY: Duration = Duration::from_secs(WINDOW.as_secs() / MAX_FAILURES as u64);
/// Sources tracked at once.
pub const MAX_SOURCES: usize = 4096;

/// Where failures are counted: an IPv4 address, or the first 64 bits of
/// an IPv6 address (an IPv4-mapped IPv6 address counts as IPv4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// An IPv4 address.
    V4(Ipv4Addr),
    /// An IPv6 `/64` prefix.
    V6Prefix(u64),
}

impl Source {
    /// The source a client address counts as.
    pub fn of(ip: IpAddr) -> Source {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Source::V4(v4),
            IpAddr::V6(v6) => Source::V6Prefix((v6.to_bits() >> 64) as u64),
        }
    }
}

/// The failure debts: each source's time at which all its failures are
/// forgotten.
type Debts = HashMap<Source, Instant>;

/// The failure counts. A cheap clonable handle.
#[derive(Clone, Default)]
pub struct Throttle {
    debts: Arc<Mutex<Debts>>,
}

/// A source held for too many failures, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    /// When the source may try again.
    pub retry_after: Duration,
}

impl Held {
    /// Whole seconds to wait (at least 1), for `Retry-After`.
    pub fn seconds(&self) -> u64 {
        self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0)
    }

    /// The `429` for a bearer-token door: `Retry-After` and a line saying
    /// when to try again.
    pub fn response(&self) -> Response {
        let seconds = self.seconds();
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, HeaderValue::from(seconds))],
            format!(
                "too many wrong tokens from this address: try again in {seconds} seconds (at most {MAX_FAILURES} failures a minute); a token whose secret has {LONG_SECRET_BYTES} characters or more is let in meanwhile\n"
            ),
        )
            .into_response()
    }
}

impl Throttle {
    /// Whether `ip` may try any secret now; `Err` says for how long it is
    /// held to long secrets. Asked before the secret is compared.
    pub fn check(&self, ip: IpAddr) -> Result<(), Held> {
        self.check_at(Source::of(ip), Instant::now())
    }

    /// Counts a failure (a wrong secret) from `ip`.
    pub fn failed(&self, ip: IpAddr) {
        self.failed_at(Source::of(ip), Instant::now());
    }

    fn check_at(&self, source: Source, now: Instant) -> Result<(), Held> {
        let debts = crate::sync::lock(&self.debts);
        let debt = debts
            .get(&source)
            .map_or(Duration::ZERO, |clear| clear.saturating_duration_since(now));
        // Held once the debt is more than MAX_FAILURES - 1 failures.
        let allowed = WINDOW.saturating_sub(DECAY);
        if debt > allowed {
            Err(Held {
                retry_after: debt - allowed,
            })
        } else {
            Ok(())
        }
    }

    fn failed_at(&self, source: Source, now: Instant) {
        let mut debts = crate::sync::lock(&self.debts);
        if !debts.contains_key(&source) && debts.len() >= MAX_SOURCES {
            debts.retain(|_, clear| *clear > now);
            if debts.len() >= MAX_SOURCES
                && let Some(soonest) = debts
                    .iter()
                    .min_by_key(|(_, clear)| **clear)
                    .map(|(s, _)| *s)
            {
                debts.remove(&soonest);
            }
        }
        let clear = debts.entry(source).or_insert(now);
        // The debt never grows past one failure beyond the hold, so a
        // source that goes on guessing while held waits one DECAY, not
        // longer and longer.
        *clear = (*clear).max(now) + DECAY;
        let cap = now + WINDOW;
        if *clear > cap {
            *clear = cap;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(last: u8) -> IpAddr {
        [10, 0, 0, last].into()
    }

    #[test]
    fn a_source_is_held_after_its_failures_and_others_are_not() {
        let t = Throttle::default();
        for _ in 0..MAX_FAILURES {
            assert!(t.check(v4(1)).is_ok());
            t.failed(v4(1));
        }
        let held = t.check(v4(1)).expect_err("held");
        assert!(held.seconds() >= 1 && held.retry_after <= DECAY, "{held:?}");
        assert!(t.check(v4(2)).is_ok());
    }

    #[test]
    fn failures_decay_with_time_only() {
        let t = Throttle::default();
        let s = Source::of(v4(1));
        let start = Instant::now();
        for _ in 0..MAX_FAILURES {
            t.failed_at(s, start);
        }
        assert!(t.check_at(s, start).is_err());
        assert!(t.check_at(s, start + DECAY / 2).is_err());
        // One DECAY later, one more failure is allowed, then held again.
        let later = start + DECAY;
        assert!(t.check_at(s, later).is_ok());
        t.failed_at(s, later);
        assert!(t.check_at(s, later).is_err());
        // Guessing while held does not lengthen the hold past one DECAY.
        for _ in 0..100 {
            t.failed_at(s, later);
        }
        assert_eq!(t.check_at(s, later).map_err(|h| h.retry_after), Err(DECAY));
        assert!(t.check_at(s, later + WINDOW).is_ok());
    }

    #[test]
    fn an_ipv6_64_is_one_source() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:ffff:ffff:ffff".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(a), Source::of(b));
        assert_ne!(Source::of(a), Source::of(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(Source::of(mapped), Source::of(v4(1)));
        let t = Throttle::default();
        for _ in 0..MAX_FAILURES {
            t.failed(a);
        }
        assert!(t.check(b).is_err());
        assert!(t.check(c).is_ok());
    }

    #[test]
    fn a_full_table_never_holds_a_source_that_failed_nothing() {
        let t = Throttle::default();
        let now = Instant::now();
        for i in 0..(MAX_SOURCES as u32 + 1000) {
            let s = Source::V4(Ipv4Addr::from(0x0b00_0000 + i));
            for _ in 0..MAX_FAILURES {
                t.failed_at(s, now);
            }
        }
        assert_eq!(crate::sync::lock(&t.debts).len(), MAX_SOURCES);
        assert!(t.check_at(Source::of(v4(1)), now).is_ok());
        // The newest sources are still held.
        let newest = Source::V4(Ipv4Addr::from(0x0b00_0000 + MAX_SOURCES as u32 + 999));
        assert!(t.check_at(newest, now).is_err());
    }
}
