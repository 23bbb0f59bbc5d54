//! One automatic answer to a device's question, shared by the presets'
//! pager replies and the modes' save confirmations.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One automatic answer: when `trigger` (a literal) arrives while a read
/// waits, `reply` is sent, once per occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AutoReply {
    /// Literal text the device prints, e.g. `--More--`.
    pub trigger: String,
    /// Text sent back, e.g. `" "`.
    pub reply: String,
}

impl AutoReply {
    /// An auto-reply from a trigger and its reply.
    pub fn new(trigger: &str, reply: &str) -> AutoReply {
        AutoReply {
            trigger: trigger.to_owned(),
            reply: reply.to_owned(),
        }
    }
}
