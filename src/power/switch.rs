//! An action on all of a port's outlets together (a device with two
//! supplies is fed by two), through each outlet's controller.

use schemars::JsonSchema;
use serde::Serialize;

use super::any::AnyDriver;
use super::driver::{OutletState, PowerDriver};
use crate::config::Config;
use crate::config::power::{OutletRef, PowerController};
use crate::error::{ErrorCode, GateError};

/// One outlet after an action: its state, or the controller's answer to
/// the switching command.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutletAnswer {
    /// `controller:outlet`.
    pub outlet: String,
    /// Its state (action status).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<OutletState>,
    /// What the controller answered the command (on, off, cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// The controller of `outlet` in the config in force.
fn controller<'a>(
    config: &'a Config,
    outlet: &OutletRef,
) -> Result<&'a PowerController, GateError> {
    config.power.get(&outlet.controller).ok_or_else(|| {
        GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "the configuration in force has no power controller {}; ask the operator to check [power] and the port's power key",
                outlet.controller
            ),
        )
    })
}

/// Each outlet's state.
pub async fn status(
    config: &Config,
    outlets: &[OutletRef],
) -> Result<Vec<OutletAnswer>, GateError> {
    let mut answers = Vec::new();
    for outlet in outlets {
        let c = controller(config, outlet)?;
        let state = AnyDriver::of(c)
            .state(&outlet.outlet)
            .await
            .map_err(|e| e.named(c, &outlet.to_string()))?;
        answers.push(OutletAnswer {
            outlet: outlet.to_string(),
            state: Some(state),
            answer: None,
        });
    }
    Ok(answers)
}

/// Switches every outlet on (`true`) or off, one after the other; a
/// failure says which were switched already.
pub async fn switch_outlets(
    config: &Config,
    outlets: &[OutletRef],
    on: bool,
) -> Result<Vec<OutletAnswer>, GateError> {
    let mut answers: Vec<OutletAnswer> = Vec::new();
    for outlet in outlets {
        let c = controller(config, outlet)?;
        let answer = AnyDriver::of(c)
            .switch(&outlet.outlet, on)
            .await
            .map_err(|e| {
                let mut e = e.named(c, &outlet.to_string());
                if !answers.is_empty() {
                    let done: Vec<&str> = answers.iter().map(|a| a.outlet.as_str()).collect();
                    e.message.push_str(&format!(
                        " (switched {} already: {})",
                        if on { "on" } else { "off" },
                        done.join(", ")
                    ));
                }
                e
            })?;
        answers.push(OutletAnswer {
            outlet: outlet.to_string(),
            state: None,
            answer: Some(answer),
        });
    }
    Ok(answers)
}
