//! Core types: operators, options, and value representations.

use std::collections::{HashMap, HashSet};

/// Line operators control input line processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LineOp {
    /// Get next input line, restart rule matching from first rule (default).
    #[default]
    Next,

    /// Keep current line, continue matching from next rule.
    Continue,

    /// Raise an error with optional message.
    Error,
}

/// Record operators control output record handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RecordOp {
    /// Do nothing (default).
    #[default]
    NoRecord,

    /// Append current record to results, then clear non-Filldown values.
    Record,

    /// Clear non-Filldown values without recording.
    Clear,

    /// Clear all values including Filldown.
    ClearAll,
}

/// State transition target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Transition {
    /// Stay in current state.
    #[default]
    Stay,

    /// Jump to named state.
    State(String),

    /// Terminate parsing immediately. This fires an implicit record.
    End,

    /// EOF state (suppress implicit record on end of input) and terminate parsing.
    Eof,
}

/// Available options for Value definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueOption {
    /// Record is skipped if this value is empty when recording.
    Required,

    /// Value persists across Clear operations (retained until ClearAll).
    Filldown,

    /// On assignment, backfill this value to previous records that have it empty.
    Fillup,

    /// Marks this value as part of the record's key (metadata only).
    Key,

    /// Value accumulates as a list instead of being replaced.
    List,
}

impl ValueOption {
    /// Parse option name from string.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Required" => Some(Self::Required),
            "Filldown" => Some(Self::Filldown),
            "Fillup" => Some(Self::Fillup),
            "Key" => Some(Self::Key),
            "List" => Some(Self::List),
            _ => None,
        }
    }

    /// Get all valid option names.
    pub fn all_names() -> &'static [&'static str] {
        &["Required", "Filldown", "Fillup", "Key", "List"]
    }
}

/// Set of options for a value.
pub type ValueOptions = HashSet<ValueOption>;

/// A single item in a List value.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
pub enum ListItem {
    /// Simple string value.
    String(String),

    /// Dict from nested named capture groups.
    Dict(HashMap<String, String>),
}

/// Runtime value during parsing.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
pub enum Value {
    /// No value assigned.
    #[default]
    Empty,

    /// Single string value.
    Single(String),

    /// List of values (for List option).
    List(Vec<ListItem>),
}

impl Value {
    /// Check if value is empty.
    pub fn is_empty(&self) -> bool {
        match self {
            Value::Empty => true,
            Value::Single(s) => s.is_empty(),
            Value::List(v) => v.is_empty(),
        }
    }

    /// Convert to output string representation.
    pub fn as_string(&self) -> String {
        match self {
            Value::Empty => String::new(),
            Value::Single(s) => s.clone(),
            Value::List(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|item| match item {
                        ListItem::String(s) => s.clone(),
                        ListItem::Dict(d) => format!("{:?}", d),
                    })
                    .collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }
}
