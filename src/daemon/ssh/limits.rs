//! The SSH door's defences before and around authentication, like the
//! HTTP listener's: a cap on connections at once, a smaller one on those
//! not yet authenticated (when it is full, the oldest of them is closed to
//! make room, so a flood of idle connections never keeps an engineer
//! out), a quarter of the door for any one person (so that one person's
//! connections, `ssh -N` left open, never fill it for everyone else), a
//! share of the signed-in room for the people of each access and weaker
//! ([`TokenAccess::share_of`]: half for read, three quarters for write,
//! of the room the unauthenticated leave), so that people of read access
//! together never keep an operator or an admin out, a deadline to
//! authenticate, and failed attempts counted by source
//! address and by user name ([`crate::daemon::http::throttle`]'s rule: a
//! few in a row, then one every few seconds).
//!
//! A held address or user has its connection closed at its next key that
//! is not the named person's (or password); a key that *is* the named
//! person's is always checked, so that nobody can lock an engineer out by failing in their
//! name or from their address (a valid signature is no guess).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::access::shares::{Bound, HeldByName};
use crate::config::TokenAccess;
use crate::daemon::http::throttle::{DECAY, Held, Throttle, WINDOW};

/// SSH connections served at once.
pub const MAX_CONNECTIONS: usize = 256;
/// Of those, connections that have not authenticated yet.
pub const MAX_UNAUTHENTICATED: usize = 64;
/// Of those, connections one person may hold signed in: a quarter, as
/// the HTTP listener allows one token.
pub const MAX_PER_PERSON: usize = MAX_CONNECTIONS / 4;
/// Connections signed in at most, when the unauthenticated take all of
/// theirs: the room the people of each access hold their share of.
pub const SIGNED_IN_ROOM: usize = MAX_CONNECTIONS - MAX_UNAUTHENTICATED;
/// How long a connection may take to authenticate.
pub const AUTH_DEADLINE: Duration = Duration::from_secs(20);
/// User names whose failures are tracked at once.
const MAX_USERS: usize = 4096;

/// The limits shared by every connection of the door. A cheap handle.
#[derive(Clone, Default)]
pub struct Gate {
    inner: Arc<Mutex<Pending>>,
    /// Connections signed in, by person and by access.
    people: Arc<Mutex<HeldByName>>,
    by_address: Throttle,
    by_user: UserThrottle,
}

/// Why a person's connection is refused though their key was right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crowded {
    /// They hold [`MAX_PER_PERSON`] connections.
    Person,
    /// The people of `access` and weaker hold `share` together.
    Access {
        /// The person's access.
        access: TokenAccess,
        /// The most those people may hold together.
        share: usize,
    },
}

impl Crowded {
    /// What the person is told.
    pub fn message(&self) -> String {
        match self {
            Crowded::Person => format!(
                "you hold {MAX_PER_PERSON} connections to this door already, the most one person may; close one and try again"
            ),
            Crowded::Access { access, share } => format!(
                "the people of {} access (and weaker) hold {share} connections to this door together, the most they may; try again when some close",
                access.name()
            ),
        }
    }
}

/// Why a connection whose person's key was right is refused, once it is:
/// what it is told when it is closed. A cheap handle.
#[derive(Clone, Default)]
pub struct OverCap(Arc<OnceLock<Crowded>>);

impl OverCap {
    /// The connection is refused for `why`.
    pub fn refuse(&self, why: Crowded) {
        let _ = self.0.set(why);
    }

    /// What the connection is told, once refused.
    pub fn message(&self) -> Option<String> {
        self.0.get().map(Crowded::message)
    }
}

/// The connections not yet authenticated, oldest first.
#[derive(Default)]
struct Pending {
    next_id: u64,
    queue: VecDeque<(u64, CancellationToken)>,
}

/// A connection's place among the unauthenticated until it authenticates
/// (or ends): [`Gate::admit`]'s answer.
pub struct Admission {
    id: u64,
    gate: Gate,
    /// Cancelled when a newer connection takes this one's place.
    pub evicted: CancellationToken,
    /// Cancelled when the connection authenticates.
    pub signed_in: CancellationToken,
    /// Set when its person's key was right but they (or the people of
    /// their access) hold their share already: it stays among the
    /// unauthenticated, to be told so and closed.
    pub over_cap: OverCap,
}

impl Admission {
    /// The connection authenticated: it no longer counts as pending.
    pub fn authenticated(&self) {
        self.gate.leave(self.id);
        self.signed_in.cancel();
    }
}

/// A connection counted among its person's signed-in ones until it ends.
pub struct PersonSlot {
    gate: Gate,
    person: String,
    access: TokenAccess,
}

impl Drop for PersonSlot {
    fn drop(&mut self) {
        crate::sync::lock(&self.gate.people).release(&self.person, self.access);
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.gate.leave(self.id);
    }
}

impl Gate {
    /// Admits a new connection among the unauthenticated, closing the
    /// oldest of them when [`MAX_UNAUTHENTICATED`] are waiting.
    pub fn admit(&self) -> Admission {
        let mut pending = crate::sync::lock(&self.inner);
        while pending.queue.len() >= MAX_UNAUTHENTICATED {
            if let Some((_, oldest)) = pending.queue.pop_front() {
                oldest.cancel();
            }
        }
        pending.next_id += 1;
        let id = pending.next_id;
        let evicted = CancellationToken::new();
        pending.queue.push_back((id, evicted.clone()));
        Admission {
            id,
            gate: self.clone(),
            evicted,
            signed_in: CancellationToken::new(),
            over_cap: OverCap::default(),
        }
    }

    /// Counts a connection `person` signed in on with `access`, until the
    /// slot drops; `Err` when they hold [`MAX_PER_PERSON`] already, or the
    /// people of their access and weaker hold their share of
    /// [`SIGNED_IN_ROOM`].
    pub fn sign_in(&self, person: &str, access: TokenAccess) -> Result<PersonSlot, Crowded> {
        crate::sync::lock(&self.people)
            .take(person, access, MAX_PER_PERSON, SIGNED_IN_ROOM)
            .map_err(|bound| match bound {
                Bound::Name(_) => Crowded::Person,
                Bound::Access { access, share } => Crowded::Access { access, share },
            })?;
        Ok(PersonSlot {
            gate: self.clone(),
            person: person.to_owned(),
            access,
        })
    }

    fn leave(&self, id: u64) {
        let mut pending = crate::sync::lock(&self.inner);
        pending.queue.retain(|(i, _)| *i != id);
    }

    /// Whether `ip` or `user` is held for failures.
    pub fn held(&self, ip: IpAddr, user: &str) -> Option<Held> {
        self.by_address
            .check(ip)
            .err()
            .or_else(|| self.by_user.check(user, Instant::now()).err())
    }

    /// Counts a failed attempt from `ip` as `user`.
    pub fn failed(&self, ip: IpAddr, user: &str) {
        self.by_address.failed(ip);
        self.by_user.failed(user, Instant::now());
    }
}

/// Failures counted by user name, with the address throttle's rule.
#[derive(Clone, Default)]
struct UserThrottle {
    debts: Arc<Mutex<HashMap<String, Instant>>>,
}

impl UserThrottle {
    fn check(&self, user: &str, now: Instant) -> Result<(), Held> {
        let debts = crate::sync::lock(&self.debts);
        let debt = debts
            .get(user)
            .map_or(Duration::ZERO, |clear| clear.saturating_duration_since(now));
        let allowed = WINDOW.saturating_sub(DECAY);
        if debt > allowed {
            Err(Held {
                retry_after: debt - allowed,
            })
        } else {
            Ok(())
        }
    }

    fn failed(&self, user: &str, now: Instant) {
        let mut debts = crate::sync::lock(&self.debts);
        if !debts.contains_key(user) && debts.len() >= MAX_USERS {
            debts.retain(|_, clear| *clear > now);
            if debts.len() >= MAX_USERS
                && let Some(soonest) = debts
                    .iter()
                    .min_by_key(|(_, clear)| **clear)
                    .map(|(u, _)| u.clone())
            {
                debts.remove(&soonest);
            }
        }
        let clear = debts.entry(user.to_owned()).or_insert(now);
        *clear = ((*clear).max(now) + DECAY).min(now + WINDOW);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_waiting_room_closes_its_oldest() {
        let gate = Gate::default();
        let first = gate.admit();
        let rest: Vec<Admission> = (1..MAX_UNAUTHENTICATED).map(|_| gate.admit()).collect();
        assert!(!first.evicted.is_cancelled());
        let newest = gate.admit();
        assert!(first.evicted.is_cancelled());
        assert!(rest.iter().all(|a| !a.evicted.is_cancelled()));
        // An authenticated connection leaves the room: nobody is evicted.
        newest.authenticated();
        let _another = gate.admit();
        assert!(!rest[0].evicted.is_cancelled());
    }

    #[test]
    fn a_person_holds_a_quarter_of_the_door_and_gets_a_place_back_as_one_ends() {
        let gate = Gate::default();
        let admin = TokenAccess::Admin;
        let mut bobs: Vec<PersonSlot> = (0..MAX_PER_PERSON)
            .map(|_| gate.sign_in("bob", admin).expect("within bob's share"))
            .collect();
        assert_eq!(
            gate.sign_in("bob", admin).err(),
            Some(Crowded::Person),
            "one more than bob's share"
        );
        assert!(
            gate.sign_in("alice", admin).is_ok(),
            "alice is not counted as bob"
        );
        bobs.pop();
        assert!(
            gate.sign_in("bob", admin).is_ok(),
            "an ended connection's place"
        );
        drop(bobs);
        assert_eq!(crate::sync::lock(&gate.people).held_by("bob"), 0);
    }

    #[test]
    fn the_people_of_an_access_hold_its_share_and_leave_room_above() {
        let gate = Gate::default();
        let (read, write) = (TokenAccess::Read, TokenAccess::Write);
        let mut held = Vec::new();
        for i in 0.. {
            match gate.sign_in(&format!("reader{}", i / MAX_PER_PERSON), read) {
                Ok(slot) => held.push(slot),
                Err(crowded) => {
                    let share = SIGNED_IN_ROOM / 2;
                    assert_eq!(
                        crowded,
                        Crowded::Access {
                            access: read,
                            share
                        }
                    );
                    assert!(crowded.message().contains("read access"));
                    break;
                }
            }
        }
        assert_eq!(held.len(), SIGNED_IN_ROOM / 2);
        for i in 0..SIGNED_IN_ROOM / 4 {
            held.push(
                gate.sign_in(&format!("writer{}", i % 2), write)
                    .expect("write's room"),
            );
        }
        assert!(gate.sign_in("writer9", write).is_err(), "three quarters");
        assert!(gate.sign_in("admin", TokenAccess::Admin).is_ok());
        held.remove(0);
        assert!(gate.sign_in("reader9", read).is_ok(), "a place back");
    }

    #[test]
    fn failures_hold_the_address_and_the_user() {
        let gate = Gate::default();
        let ip: IpAddr = [10, 0, 0, 1].into();
        for _ in 0..crate::daemon::http::throttle::MAX_FAILURES {
            assert!(gate.held(ip, "alice").is_none());
            gate.failed(ip, "alice");
        }
        assert!(gate.held(ip, "bob").is_some(), "the address is held");
        assert!(
            gate.held([10, 0, 0, 2].into(), "alice").is_some(),
            "the user is held"
        );
        assert!(gate.held([10, 0, 0, 2].into(), "bob").is_none());
    }
}
