//! How many forwarded calls may be in flight at once, so that one site
//! whose switch answers slowly, or one token's flood, cannot take what the
//! others need: at a serving gateway per site (and per token, and for the
//! tokens of each access and weaker ones together: half for read, three
//! quarters with write, [`TokenAccess::share_of`]), at a site per token of
//! a serving gateway.
//! A call beyond a bound is answered at once with `busy`, never queued:
//! a queue would only turn the flood into everybody's wait.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::access::shares::{Bound, HeldByName};
use crate::config::TokenAccess;

/// The bounds of one [`InFlight`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most calls in flight in one scope (a site), all tokens together.
    pub total: usize,
    /// Most calls of one token in one scope.
    pub per_token: usize,
}

/// Which bound a call met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The token's own.
    Token(usize),
    /// The tokens' of `access` and weaker ones together: `share` of the
    /// scope's total.
    Access {
        /// The calling token's access.
        access: TokenAccess,
        /// The most those tokens may have in flight together.
        share: usize,
    },
    /// The scope's, all tokens together.
    Total(usize),
}

#[derive(Default)]
struct Scope {
    total: usize,
    held: HeldByName,
}

/// The calls in flight, by scope and token. A cheap clonable handle.
#[derive(Clone, Default)]
pub struct InFlight {
    scopes: Arc<Mutex<HashMap<String, Scope>>>,
    refused: Arc<AtomicU64>,
}

/// One call in flight; it is counted until this drops.
pub struct Slot {
    in_flight: InFlight,
    scope: String,
    token: String,
    access: TokenAccess,
}

impl InFlight {
    /// Counts a call of `token` (of `access`) in `scope`, or says which
    /// bound of `limits` it would pass.
    pub fn start(
        &self,
        scope: &str,
        token: &str,
        access: TokenAccess,
        limits: &Limits,
    ) -> Result<Slot, Full> {
        let mut scopes = crate::sync::lock(&self.scopes);
        let counts = scopes.entry(scope.to_owned()).or_default();
        // The token's own bound is named first, then the scope's total.
        let taken = if counts.held.held_by(token) < limits.per_token && counts.total >= limits.total
        {
            Err(Full::Total(limits.total))
        } else {
            counts
                .held
                .take(token, access, limits.per_token, limits.total)
                .map_err(|bound| match bound {
                    Bound::Name(most) => Full::Token(most),
                    Bound::Access { access, share } => Full::Access { access, share },
                })
        };
        if let Err(full) = taken {
            if counts.total == 0 {
                scopes.remove(scope);
            }
            return Err(full);
        }
        counts.total += 1;
        Ok(Slot {
            in_flight: self.clone(),
            scope: scope.to_owned(),
            token: token.to_owned(),
            access,
        })
    }

    /// Counts one refusal; whether it is one to log (the 1st, 2nd, 4th,
    /// 8th…), so that a flood does not flood the log too.
    pub fn refused_to_log(&self) -> Option<u64> {
        let n = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        n.is_power_of_two().then_some(n)
    }

    /// The calls in flight in `scope`.
    #[cfg(test)]
    fn count(&self, scope: &str) -> usize {
        crate::sync::lock(&self.scopes)
            .get(scope)
            .map_or(0, |s| s.total)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut scopes = crate::sync::lock(&self.in_flight.scopes);
        let Some(counts) = scopes.get_mut(&self.scope) else {
            return;
        };
        counts.total = counts.total.saturating_sub(1);
        counts.held.release(&self.token, self.access);
        if counts.total == 0 {
            scopes.remove(&self.scope);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        total: 8,
        per_token: 3,
    };

    #[test]
    fn one_tokens_flood_leaves_room_for_the_others_and_other_sites() {
        let in_flight = InFlight::default();
        let flood: Vec<Slot> = (0..3)
            .map(|_| in_flight.start("dc1", "reader", TokenAccess::Read, &LIMITS))
            .collect::<Result<_, _>>()
            .expect("within the token's bound");
        assert_eq!(
            in_flight
                .start("dc1", "reader", TokenAccess::Read, &LIMITS)
                .err(),
            Some(Full::Token(3))
        );
        // another site is another scope
        assert!(
            in_flight
                .start("dc2", "reader", TokenAccess::Read, &LIMITS)
                .is_ok()
        );
        // another read-only token takes the read-only share's last slot
        let other = in_flight
            .start("dc1", "viewer", TokenAccess::Read, &LIMITS)
            .expect("the read-only share's last");
        assert_eq!(
            in_flight
                .start("dc1", "auditor", TokenAccess::Read, &LIMITS)
                .err(),
            Some(Full::Access {
                access: TokenAccess::Read,
                share: 4
            })
        );
        // the tokens that write have three quarters with the readers
        let writers: Vec<Slot> = ["ops", "ops"]
            .iter()
            .map(|t| in_flight.start("dc1", t, TokenAccess::Write, &LIMITS))
            .collect::<Result<_, _>>()
            .expect("the writers' share");
        assert_eq!(
            in_flight
                .start("dc1", "root", TokenAccess::Write, &LIMITS)
                .err(),
            Some(Full::Access {
                access: TokenAccess::Write,
                share: 6
            })
        );
        // and an admin the rest
        let admins: Vec<Slot> = (0..2)
            .map(|_| in_flight.start("dc1", "admin", TokenAccess::Admin, &LIMITS))
            .collect::<Result<_, _>>()
            .expect("the admin's room");
        assert_eq!(in_flight.count("dc1"), 8);
        assert_eq!(
            in_flight
                .start("dc1", "admin2", TokenAccess::Admin, &LIMITS)
                .err(),
            Some(Full::Total(8))
        );
        // a call that ends gives its slot back
        drop(other);
        assert!(
            in_flight
                .start("dc1", "auditor", TokenAccess::Read, &LIMITS)
                .is_ok()
        );
        drop((flood, writers, admins));
        assert_eq!(in_flight.count("dc1"), 0);
        assert!(crate::sync::lock(&in_flight.scopes).is_empty());
    }

    #[test]
    fn refusals_are_logged_at_powers_of_two() {
        let in_flight = InFlight::default();
        let logged: Vec<u64> = (0..10).filter_map(|_| in_flight.refused_to_log()).collect();
        assert_eq!(logged, [1, 2, 4, 8]);
    }
}
