//! The descriptions and schemas [`super::describe`] makes, checked
//! against the tools' own argument types: a file of its own so that
//! `describe`, which every tool group imports, imports none of them.

use super::args::{MAX_MAX_OUTPUT, MAX_SEND_BYTES, MAX_TIMEOUT_S, MAX_TRIGGERS};
use super::describe::*;
use super::expect::{ExpectArgs, MAX_STEPS};
use super::io::SendTextArgs;
use std::time::Duration;

#[test]
fn output_schemas_inline_definitions_and_fold_nullable_values() {
    let mut schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {
            "Mode": {"description": "A mode.", "oneOf": [
                {"const": "a", "type": "string"}, {"const": "b", "type": "string"}
            ]},
            "Event": {"type": "object", "properties": {"at": {"type": "integer", "format": "uint64"}}}
        },
        "type": "object",
        "properties": {
            "mode": {"description": "The mode, or null.", "anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
            "state": {"$ref": "#/$defs/Mode"},
            "last": {"anyOf": [{"$ref": "#/$defs/Event"}, {"type": "null"}]},
            "events": {"type": "array", "items": {"$ref": "#/$defs/Event"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
        }
    });
    lean_output_schema(schema.as_object_mut().unwrap());
    let event = serde_json::json!({"type": "object", "properties": {"at": {"type": "integer"}}});
    assert_eq!(
        schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "mode": {"description": "The mode, or null.", "enum": ["a", "b", null], "type": ["string", "null"]},
                "state": {"description": "A mode", "enum": ["a", "b"], "type": "string"},
                "last": {"type": ["object", "null"], "properties": {"at": {"type": "integer"}}},
                "events": {"type": "array", "items": event},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            }
        })
    );
}

#[test]
fn sizes_are_spelled_in_their_largest_whole_unit() {
    assert_eq!(size(16 * MIB), "16 MiB");
    assert_eq!(size(MIB), "1 MiB");
    assert_eq!(size(64 * KIB), "64 KiB");
    assert_eq!(size(256 * KIB), "256 KiB");
    assert_eq!(size(MIB + KIB), "1025 KiB");
    assert_eq!(size(4096), "4096 bytes");
    assert_eq!(size(4000), "4000 bytes");
    assert_eq!(size(64 * KIB + 1), "65537 bytes");
    assert_eq!(size(0), "0 bytes");
}

#[test]
fn durations_and_lists_are_spelled_as_agents_pass_them() {
    assert_eq!(seconds(600.0), "600");
    assert_eq!(seconds(1.0), "1");
    assert_eq!(seconds(0.5), "0.5");
    assert_eq!(millis(Duration::from_secs(10)), "10000");
    assert_eq!(millis(Duration::from_millis(250)), "250");
    assert_eq!(list(&[9600, 115200]), "[9600, 115200]");
    assert_eq!(list(&[]), "[]");
}

/// The description at `pointer` in `schema`.
fn description(schema: &serde_json::Value, pointer: &str) -> String {
    schema
        .pointer(pointer)
        .and_then(|d| d.as_str())
        .unwrap_or_else(|| panic!("no description at {pointer} in {schema}"))
        .to_owned()
}

#[test]
fn descriptions_follow_their_constants() {
    let text = schemars::schema_for!(SendTextArgs);
    let text = description(text.as_value(), "/properties/text/description");
    assert!(text.contains(&size(MAX_SEND_BYTES as u64)), "{text}");

    let expect = schemars::schema_for!(ExpectArgs);
    let steps = description(expect.as_value(), "/properties/steps/description");
    assert!(steps.contains(&format!("1 to {MAX_STEPS}")), "{steps}");
    let send = description(
        expect.as_value(),
        "/$defs/ExpectStep/properties/send/description",
    );
    assert!(send.contains(&size(MAX_SEND_BYTES as u64)), "{send}");
    let replies = description(expect.as_value(), "/properties/auto_reply/description");
    assert!(replies.contains(&auto_reply_limits()), "{replies}");
    assert!(
        replies.contains(&format!("{MAX_TRIGGERS} triggers")),
        "{replies}"
    );
    let timeout = description(
        expect.as_value(),
        "/$defs/ExpectStep/properties/timeout/description",
    );
    assert!(
        timeout.contains(&format!("at most {}", seconds(MAX_TIMEOUT_S))),
        "{timeout}"
    );
    let output = description(expect.as_value(), "/properties/max_output/description");
    assert!(output.contains(&size(MAX_MAX_OUTPUT)), "{output}");

    let tools = super::router::shared_tool_router().list_all();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.description.clone())
            .unwrap_or_else(|| panic!("no tool {name} with a description"))
    };
    let expect_tool = tool("expect");
    assert!(
        expect_tool.contains(&format!("1-{MAX_STEPS} steps")),
        "{expect_tool}"
    );
    let send_text = tool("send_text");
    assert!(
        send_text.contains(&size(MAX_SEND_BYTES as u64)),
        "{send_text}"
    );
}

#[test]
fn lean_schemas_keep_names_types_and_meaning() {
    let mut schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"Mode": {"description": "A mode.", "oneOf": [
            {"const": "a", "description": "First.", "type": "string"},
            {"const": "b", "type": "string"}]}},
        "properties": {
            "n": {"type": ["integer", "null"], "format": "uint64", "minimum": 0, "default": null},
            "format": {"type": "string", "default": "text"},
            "mode": {"$ref": "#/$defs/Mode"}
        }
    });
    let serde_json::Value::Object(map) = &mut schema else {
        unreachable!()
    };
    lean_schema(map);
    assert_eq!(
        schema,
        serde_json::json!({
            "$defs": {"Mode": {"description": "A mode: a = First", "enum": ["a", "b"], "type": "string"}},
            "properties": {
                "n": {"type": ["integer", "null"], "minimum": 0},
                "format": {"type": "string", "default": "text"},
                "mode": {"$ref": "#/$defs/Mode"}
            }
        })
    );
}
