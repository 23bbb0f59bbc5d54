//! How the text an agent reads states limits. The descriptions of tool
//! arguments, results and tools quote sizes, durations and counts that
//! constants own; they are built from those constants with these helpers
//! (`#[schemars(description = ...)]`, `#[tool(description = ...)]`), so a
//! changed constant changes what the agent is told, and a quantity is
//! spelled the same way everywhere. The phrases several tools share (the
//! `timeout`, `max_output` and `auto_reply` limits) are here too.

use std::time::Duration;

use super::args::{
    DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT_S, MAX_MAX_OUTPUT, MAX_REPLY_BYTES, MAX_TIMEOUT_S,
    MAX_TRIGGER_BYTES, MAX_TRIGGERS,
};

pub(super) const KIB: u64 = 1024;
pub(super) const MIB: u64 = 1024 * KIB;
/// Sizes below this are spelled exactly, in bytes ("4096 bytes").
const SMALL: u64 = 8 * KIB;

/// A byte size as descriptions spell it: whole MiB ("16 MiB"), else whole
/// KiB ("64 KiB"), else bytes ("4096 bytes"); small sizes always in bytes.
pub fn size(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= SMALL && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Seconds as an agent passes them: "600", "1", "0.5" (no trailing ".0").
pub fn seconds(s: f64) -> String {
    format!("{s}")
}

/// A duration in whole milliseconds: "10000".
pub fn millis(d: Duration) -> String {
    d.as_millis().to_string()
}

/// A list of numbers as JSON writes it: "[9600, 19200]".
pub fn list(items: &[u32]) -> String {
    let items: Vec<String> = items.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// The limits of a prompt wait's `timeout`: its default and its maximum.
pub fn timeout_limits() -> String {
    format!(
        "default {}, at most {}",
        seconds(DEFAULT_TIMEOUT_S),
        seconds(MAX_TIMEOUT_S)
    )
}

/// The limits of `max_output`: its default and its maximum.
pub fn max_output_limits() -> String {
    format!(
        "default {DEFAULT_MAX_OUTPUT}, at most {}",
        size(MAX_MAX_OUTPUT)
    )
}

/// The limits of `auto_reply`: how many triggers, how long each trigger
/// and each reply.
pub fn auto_reply_limits() -> String {
    format!(
        "{MAX_TRIGGERS} triggers of 1-{}, replies at most {}",
        size(MAX_TRIGGER_BYTES as u64),
        size(MAX_REPLY_BYTES as u64)
    )
}

/// An input schema as the model reads it, without what costs context and
/// tells it nothing: the `$schema` dialect (2020-12 is MCP's default),
/// `"default": null` (absent and null mean the same), integer `format`s;
/// and enums of string constants written as one `enum` list, their
/// descriptions folded into the one description.
pub fn lean_schema(schema: &mut serde_json::Map<String, serde_json::Value>) {
    schema.remove("$schema");
    lean_value(schema);
}

fn lean_value(object: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::Value;
    if object.get("default").is_some_and(Value::is_null) {
        object.remove("default");
    }
    // A property may be named `format`: only a string value is the keyword.
    if object.get("format").is_some_and(Value::is_string) {
        object.remove("format");
    }
    if let Some(Value::Array(variants)) = object.get("oneOf")
        && let Some((names, described)) = string_constants(variants)
    {
        let mut text = object
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim_end_matches('.')
            .to_owned();
        if !described.is_empty() {
            text.push_str(": ");
            text.push_str(&described.join("; "));
        }
        object.remove("oneOf");
        object.insert("type".into(), Value::from("string"));
        object.insert("enum".into(), Value::from(names));
        if !text.is_empty() {
            object.insert("description".into(), Value::from(text));
        }
    }
    for value in object.values_mut() {
        match value {
            Value::Object(inner) => lean_value(inner),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(inner) = item {
                        lean_value(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

/// An output schema that clients validate quickly, with the same fields
/// and types: definitions written in place (a `$ref` costs the Python
/// SDK's validator a lookup for every value it checks), an optional value
/// as its type or enum with `null` added rather than `anyOf [X, null]`
/// (whose failing branch is an error built and thrown away on every call),
/// and the input schemas' leaning ([`lean_schema`]). `status`'s validation
/// in the Python SDK went from about 1.0 to 0.36 ms a call with this.
pub fn lean_output_schema(schema: &mut serde_json::Map<String, serde_json::Value>) {
    let defs = match schema.remove("$defs") {
        Some(serde_json::Value::Object(defs)) => defs,
        _ => serde_json::Map::new(),
    };
    inline_refs(schema, &defs, 0);
    lean_schema(schema);
    fold_nullable(schema);
}

/// Deepest `$ref` written in place (the result types are not recursive;
/// a deeper one stays a reference, and valid).
const MAX_INLINE_DEPTH: usize = 16;

fn inline_refs(
    object: &mut serde_json::Map<String, serde_json::Value>,
    defs: &serde_json::Map<String, serde_json::Value>,
    depth: usize,
) {
    use serde_json::Value;
    if depth >= MAX_INLINE_DEPTH {
        return;
    }
    let target = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        .and_then(Value::as_object);
    if let Some(def) = target {
        let mut merged = def.clone();
        object.remove("$ref");
        // The referring schema's own words (its description) win.
        merged.extend(std::mem::take(object));
        *object = merged;
    }
    for value in object.values_mut() {
        match value {
            Value::Object(inner) => inline_refs(inner, defs, depth + 1),
            Value::Array(items) => {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    inline_refs(item, defs, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// `anyOf`/`oneOf` of one schema with a `type` and `{"type": "null"}`,
/// rewritten as that schema with `null` allowed.
fn fold_nullable(object: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::Value;
    for value in object.values_mut() {
        match value {
            Value::Object(inner) => fold_nullable(inner),
            Value::Array(items) => {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    fold_nullable(item);
                }
            }
            _ => {}
        }
    }
    let null = serde_json::json!({"type": "null"});
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = object.get(key) else {
            continue;
        };
        if alternatives.len() != 2 || !alternatives.contains(&null) {
            continue;
        }
        let Some(mut merged) = alternatives
            .iter()
            .find(|a| **a != null)
            .and_then(Value::as_object)
            .cloned()
        else {
            continue;
        };
        let Some(Value::String(kind)) = merged.get("type").cloned() else {
            continue;
        };
        merged.insert("type".into(), serde_json::json!([kind, "null"]));
        if let Some(Value::Array(values)) = merged.get_mut("enum") {
            values.push(Value::Null);
        }
        object.remove(key);
        merged.extend(std::mem::take(object));
        *object = merged;
        return;
    }
}

/// The names of a `oneOf` made only of string constants, and their
/// descriptions as `name (what it is)`.
fn string_constants(variants: &[serde_json::Value]) -> Option<(Vec<String>, Vec<String>)> {
    let mut names = Vec::new();
    let mut described = Vec::new();
    for variant in variants {
        let name = variant.get("const")?.as_str()?;
        if variant.get("type").and_then(|t| t.as_str()) != Some("string") {
            return None;
        }
        if let Some(what) = variant.get("description").and_then(|d| d.as_str()) {
            described.push(format!(
                "{name} = {}",
                what.trim_end_matches('.').replace('\n', " ")
            ));
        }
        names.push(name.to_owned());
    }
    Some((names, described))
}
