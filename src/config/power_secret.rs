//! A power controller's secret (a NUT user's or a BMC user's password, a
//! community, a v3 passphrase), read from a private file: kept out of
//! `Debug` and of any serialized form.

use std::fmt;

/// A secret a controller is logged in with: never shown (`Debug` prints
/// a placeholder) nor serialized.
#[derive(Clone, PartialEq, Eq)]
pub struct PowerSecret(pub(super) String);

impl PowerSecret {
    /// A secret read from its private file.
    pub(super) fn new(secret: String) -> PowerSecret {
        PowerSecret(secret)
    }

    /// The secret, to send to the controller.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PowerSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PowerSecret(<redacted>)")
    }
}
