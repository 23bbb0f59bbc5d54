//! What a power driver does, what it is asked and how it fails.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::power::PowerController;
use crate::error::{ErrorCode, GateError};

/// What the `power` tool asks of a port's outlets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Read each outlet's state.
    Status,
    /// Switch them on.
    On,
    /// Switch them off.
    Off,
    /// Off, a pause, on.
    Cycle,
}

/// An outlet's state as its controller reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutletState {
    /// Feeding its device.
    On,
    /// Not feeding it.
    Off,
    /// Something else the controller says (bounded and escaped).
    Other(String),
}

/// A failure to reach or use a controller, before it is named in the
/// caller's error.
#[derive(Debug)]
pub enum DriverError {
    /// No answer within the deadline.
    Deadline(Duration),
    /// It could not be reached, or broke the protocol.
    Unreachable(String),
    /// It answered with an error (its words, bounded and escaped).
    Refused(String),
    /// No answer within the deadline from a protocol whose servers stay
    /// silent to a wrong login (SNMP): what to check besides the network.
    Silent {
        /// The deadline that passed.
        deadline: Duration,
        /// What to check, e.g. the community.
        check: String,
    },
    /// It refused the login or the access (its words, and what to check).
    Denied {
        /// What it said.
        why: String,
        /// What to check.
        check: String,
    },
    /// It has no such outlet (its words).
    NoOutlet(String),
}

impl DriverError {
    /// The caller's error: the controller named, what happened, what to do.
    pub fn named(self, controller: &PowerController, outlet: &str) -> GateError {
        let who = format!(
            "power controller {} ({} {})",
            controller.name,
            controller.driver_name(),
            controller.address()
        );
        match self {
            DriverError::Deadline(d) => GateError::new(
                ErrorCode::Timeout,
                format!(
                    "{who} did not answer within its deadline of {}; check that it is up and reachable, or raise [power.{}] deadline",
                    humantime::format_duration(d),
                    controller.name
                ),
            ),
            DriverError::Unreachable(why) => GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "{who} cannot be reached: {why}; check its address and that its server runs"
                ),
            ),
            DriverError::Refused(answer) => GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "{who} refused outlet {outlet}: {answer}; check that the outlet exists on it and that the config's user and password_file are the ones it accepts"
                ),
            ),
            DriverError::Silent { deadline, check } => GateError::new(
                ErrorCode::Timeout,
                format!(
                    "{who} did not answer within its deadline of {}; {check}, or raise [power.{}] deadline",
                    humantime::format_duration(deadline),
                    controller.name
                ),
            ),
            DriverError::Denied { why, check } => GateError::new(
                ErrorCode::PortUnavailable,
                format!("{who} refused the request for outlet {outlet}: {why}; {check}"),
            ),
            DriverError::NoOutlet(answer) => GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "{who} refused outlet {outlet}: it has no such outlet ({answer}); check the port's power key against the outlet numbers the controller shows"
                ),
            ),
        }
    }
}

/// What every power driver does with one of its outlets.
pub trait PowerDriver {
    /// The outlet's state.
    fn state(
        &self,
        outlet: &str,
    ) -> impl std::future::Future<Output = Result<OutletState, DriverError>> + Send;

    /// Switches the outlet on (`true`) or off; returns the controller's
    /// answer, for the audit trail.
    fn switch(
        &self,
        outlet: &str,
        on: bool,
    ) -> impl std::future::Future<Output = Result<String, DriverError>> + Send;
}
