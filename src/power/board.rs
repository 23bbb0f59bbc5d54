//! Who is switching which outlet, and the rest each outlet gets between
//! switching calls: daemon-wide, since two sessions (or two ports of one
//! dual-fed device) may name the same outlet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::power::OutletRef;
use crate::error::{ErrorCode, GateError};

/// One outlet's use.
#[derive(Default)]
struct OutletUse {
    /// Who switches it now, and since when.
    busy: Option<(String, Instant)>,
    /// When the last switching call on it ended, and whether an admin
    /// made it.
    last: Option<(Instant, bool)>,
}

/// Every outlet's use, by `controller:outlet`. A cheap clonable handle.
#[derive(Clone, Default)]
pub struct PowerBoard {
    outlets: Arc<Mutex<HashMap<String, OutletUse>>>,
}

/// A switching call's hold on its outlets: while it lives they are busy;
/// dropping it starts their minimum interval.
pub struct Switching {
    board: PowerBoard,
    keys: Vec<String>,
    admin: bool,
}

impl Drop for Switching {
    fn drop(&mut self) {
        let mut outlets = crate::sync::lock(&self.board.outlets);
        for key in &self.keys {
            let u = outlets.entry(key.clone()).or_default();
            u.busy = None;
            u.last = Some((Instant::now(), self.admin));
        }
    }
}

impl PowerBoard {
    /// Takes `outlets` for a switching call by `who`, or says why not:
    /// `busy` while another call switches one of them (naming it), or
    /// before an outlet's `min_interval` since the last call has passed
    /// (saying when to retry). An admin is not held by the interval a
    /// caller below admin started, so that a low-privilege token cannot
    /// keep an admin from a device by switching it over and over.
    pub fn begin(
        &self,
        outlets: &[(OutletRef, Duration)],
        who: &str,
        admin: bool,
    ) -> Result<Switching, GateError> {
        let mut board = crate::sync::lock(&self.outlets);
        let now = Instant::now();
        for (outlet, min_interval) in outlets {
            let Some(u) = board.get(&outlet.to_string()) else {
                continue;
            };
            if let Some((by, since)) = &u.busy {
                return Err(GateError::new(
                    ErrorCode::Busy,
                    format!(
                        "outlet {outlet} is being switched by {by} (for {}s); wait for that call to end, then look with action status",
                        now.duration_since(*since).as_secs()
                    ),
                ));
            }
            if let Some((at, by_admin)) = u.last {
                let rest = (at + *min_interval).saturating_duration_since(now);
                // An admin is not held by a lesser caller's call.
                if !rest.is_zero() && (!admin || by_admin) {
                    return Err(GateError::new(
                        ErrorCode::Busy,
                        format!(
                            "outlet {outlet} was switched {}s ago and rests {}s between calls; retry in {:.1}s",
                            now.duration_since(at).as_secs(),
                            min_interval.as_secs_f64(),
                            rest.as_secs_f64()
                        ),
                    ));
                }
            }
        }
        let keys: Vec<String> = outlets.iter().map(|(o, _)| o.to_string()).collect();
        for key in &keys {
            board.entry(key.clone()).or_default().busy = Some((who.to_owned(), now));
        }
        Ok(Switching {
            board: self.clone(),
            keys,
            admin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outlet(n: &str) -> (OutletRef, Duration) {
        (
            OutletRef {
                controller: "pdu1".into(),
                outlet: n.into(),
            },
            Duration::from_secs(30),
        )
    }

    #[test]
    fn busy_then_resting_and_an_admin_is_not_held_by_a_lesser_caller() {
        let board = PowerBoard::default();
        let held = board.begin(&[outlet("4")], "token a", false).unwrap();
        let e = board
            .begin(&[outlet("5"), outlet("4")], "token b", true)
            .err()
            .unwrap();
        assert_eq!(e.code, ErrorCode::Busy);
        assert!(
            e.message.contains("pdu1:4 is being switched by token a"),
            "{e}"
        );
        drop(held);
        let e = board.begin(&[outlet("4")], "token a", false).err().unwrap();
        assert!(e.message.contains("retry in"), "{e}");
        // The admin may; after the admin's call, even the admin waits.
        drop(board.begin(&[outlet("4")], "token adm", true).unwrap());
        assert!(board.begin(&[outlet("4")], "token adm", true).is_err());
        board.begin(&[outlet("5")], "token a", false).unwrap();
    }
}
