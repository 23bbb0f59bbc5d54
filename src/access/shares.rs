//! Places that callers of every access share (a door's connections, the
//! web view's browser logins), counted by access: the callers of one
//! access and every weaker one hold at most their share together
//! ([`TokenAccess::share_of`]: half for read, three quarters with write),
//! so that callers of one access, however many, always leave room for
//! those above them. Metrics tokens count as read. [`HeldByName`] adds
//! the bound each caller (a token, a person) has of its own.

use std::collections::{BTreeMap, HashMap};

use crate::config::TokenAccess;

/// The places held now, by access.
#[derive(Debug, Default)]
pub struct HeldByAccess(BTreeMap<TokenAccess, usize>);

/// The class an access is counted in for the shares: metrics with read.
pub fn counted_as(access: TokenAccess) -> TokenAccess {
    access.max(TokenAccess::Read)
}

impl HeldByAccess {
    /// Counts one more place of `access`, if the callers of `access` and
    /// weaker ones hold less than their share of `total`; `Err` is that
    /// share, when they hold it all.
    pub fn take(&mut self, access: TokenAccess, total: usize) -> Result<(), usize> {
        let share = access.share_of(total);
        if self.at_or_below(access) >= share {
            return Err(share);
        }
        self.add(access);
        Ok(())
    }

    /// Counts one more place of `access`, share or not (a place held
    /// already, counted again).
    pub fn add(&mut self, access: TokenAccess) {
        *self.0.entry(counted_as(access)).or_insert(0) += 1;
    }

    /// A place of `access` was given back.
    pub fn release(&mut self, access: TokenAccess) {
        if let Some(held) = self.0.get_mut(&counted_as(access)) {
            *held = held.saturating_sub(1);
        }
    }

    /// The places the callers of `access` and of weaker ones hold.
    pub fn at_or_below(&self, access: TokenAccess) -> usize {
        self.0.range(..=counted_as(access)).map(|(_, n)| n).sum()
    }
}

/// Places held by named callers (tokens, people), each of an access:
/// at most a bound per name, and each access's share together.
#[derive(Debug, Default)]
pub struct HeldByName {
    by_name: HashMap<String, usize>,
    by_access: HeldByAccess,
}

/// Which bound a place would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The caller's own: it holds this many already.
    Name(usize),
    /// The callers' of `access` and weaker ones together: `share`.
    Access {
        /// The caller's access.
        access: TokenAccess,
        /// The most those callers may hold together.
        share: usize,
    },
}

impl HeldByName {
    /// Counts one more place of `name` (of `access`), if it holds fewer
    /// than `per_name` and the callers of its access and weaker ones hold
    /// less than their share of `total`; else the bound it would pass.
    pub fn take(
        &mut self,
        name: &str,
        access: TokenAccess,
        per_name: usize,
        total: usize,
    ) -> Result<(), Bound> {
        if self.held_by(name) >= per_name {
            return Err(Bound::Name(per_name));
        }
        self.by_access
            .take(access, total)
            .map_err(|share| Bound::Access { access, share })?;
        *self.by_name.entry(name.to_owned()).or_insert(0) += 1;
        Ok(())
    }

    /// A place of `name` (of `access`) was given back.
    pub fn release(&mut self, name: &str, access: TokenAccess) {
        if let Some(held) = self.by_name.get_mut(name) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.by_name.remove(name);
            }
        }
        self.by_access.release(access);
    }

    /// The places `name` holds.
    pub fn held_by(&self, name: &str) -> usize {
        self.by_name.get(name).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_access_holds_its_share_with_the_weaker_ones_and_leaves_room_above() {
        let (read, write, admin) = (TokenAccess::Read, TokenAccess::Write, TokenAccess::Admin);
        let mut held = HeldByAccess::default();
        for _ in 0..3 {
            held.take(read, 8).expect("read's half");
        }
        held.take(TokenAccess::Metrics, 8)
            .expect("metrics counts as read");
        assert_eq!(held.take(read, 8), Err(4));
        assert_eq!(held.take(TokenAccess::Metrics, 8), Err(4));
        held.take(write, 8).expect("write's three quarters");
        held.take(write, 8).expect("write's three quarters");
        assert_eq!(held.take(write, 8), Err(6));
        held.take(admin, 8).expect("the admin's room");
        held.take(admin, 8).expect("the admin's room");
        held.release(TokenAccess::Metrics);
        held.take(read, 8).expect("a place given back");
        assert_eq!(held.at_or_below(admin), 8);
    }

    #[test]
    fn a_name_holds_its_own_bound_and_its_access_its_share() {
        let (read, admin) = (TokenAccess::Read, TokenAccess::Admin);
        let mut held = HeldByName::default();
        held.take("bob", read, 2, 8).expect("bob's first");
        held.take("bob", read, 2, 8).expect("bob's second");
        assert_eq!(held.take("bob", read, 2, 8), Err(Bound::Name(2)));
        held.take("dave", read, 2, 8).expect("dave's first");
        held.take("dave", read, 2, 8).expect("dave's second");
        assert_eq!(
            held.take("erin", read, 2, 8),
            Err(Bound::Access {
                access: read,
                share: 4
            })
        );
        held.take("alice", admin, 2, 8).expect("room above");
        held.release("bob", read);
        held.release("bob", read);
        assert_eq!(held.held_by("bob"), 0);
        assert!(!held.by_name.contains_key("bob"), "no name kept at zero");
        held.take("erin", read, 2, 8).expect("a place given back");
    }
}
