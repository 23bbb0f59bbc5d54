//! One template run over one output within its bounds: at most
//! [`MAX_PARSE_BYTES`] of text, [`PARSE_DEADLINE`] of time checked every
//! [`LINES_PER_PIECE`] lines, and each match bounded by the regex engine
//! (linear time, or a million backtracking steps). The records come out as
//! Python textfsm's `ParseTextToDicts` makes them, keys lowercased as
//! ntc-templates and Netmiko give them.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use textfsm_core::{ListItem, Template, ValueOption};

use super::library::Found;

/// The most clean output a parse takes: past it, the output is refused
/// with the reason (no template needs more than a large `show` gives).
pub const MAX_PARSE_BYTES: usize = 512 * 1024;
/// How long one parse may run.
pub const PARSE_DEADLINE: Duration = Duration::from_secs(2);
/// Lines parsed between two looks at the deadline.
pub const LINES_PER_PIECE: usize = 64;

/// One record: value names in lower case to a string or a list.
pub type Record = Map<String, Value>;

/// What `parse` gives a result: records and the template's name, or no
/// records (`None`) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// One object per record, keyed by the template's value names in
    /// lower case; a List value is an array.
    pub parsed: Option<Vec<Value>>,
    /// The template's file name, when one was found.
    pub template: Option<String>,
    /// Why `parsed` is null.
    pub note: Option<String>,
}

impl Outcome {
    /// No records, for `why`.
    pub fn none(template: Option<String>, why: String) -> Outcome {
        Outcome {
            parsed: None,
            template,
            note: Some(why),
        }
    }
}

/// Runs `found` over `text`, with [`PARSE_DEADLINE`] from now.
pub fn parse_output(found: &Found, text: &str) -> Outcome {
    parse_until(found, text, Instant::now() + PARSE_DEADLINE)
}

/// Runs `found` over `text` until `deadline`.
pub fn parse_until(found: &Found, text: &str, deadline: Instant) -> Outcome {
    let name = Some(found.name.clone());
    if text.len() > MAX_PARSE_BYTES {
        return Outcome::none(
            name,
            format!(
                "the output is {} bytes, more than the {MAX_PARSE_BYTES} a parse takes: narrow the command (e.g. `| include`, one interface) and parse that",
                text.len()
            ),
        );
    }
    match joined(found, text, deadline) {
        Ok(parsed) => Outcome {
            parsed: Some(parsed.into_iter().map(Value::Object).collect()),
            template: name,
            note: None,
        },
        Err(why) => Outcome::none(name, why),
    }
}

/// The first template's records, with the columns of every further one
/// joined in as Python's CliTable does: on the keys (the Key values of
/// the first template that has any) where there are keys, row by row
/// where there are none; a row nothing matches gets "" in them.
fn joined(found: &Found, text: &str, deadline: Instant) -> Result<Vec<Record>, String> {
    // The joined table so far: its columns and its rows.
    let mut table: Option<(Vec<String>, Vec<Record>)> = None;
    let mut keys: Vec<String> = Vec::new();
    for (_, template) in &found.templates {
        let rows = records(template, text, deadline)?;
        let header: Vec<String> = template
            .values()
            .iter()
            .map(|v| v.name.to_lowercase())
            .collect();
        if keys.is_empty() {
            keys = template
                .values()
                .iter()
                .filter(|v| v.has_option(ValueOption::Key))
                .map(|v| v.name.to_lowercase())
                .collect();
        }
        let Some((first_header, first_rows)) = table.as_mut() else {
            table = Some((header, rows));
            continue;
        };
        if let Some(k) = keys.iter().find(|k| !first_header.contains(k)) {
            return Err(format!(
                "the index row's templates do not share the key {k}"
            ));
        }
        let added: Vec<String> = header
            .into_iter()
            .filter(|c| !first_header.contains(c))
            .collect();
        if added.is_empty() {
            continue;
        }
        first_header.extend(added.iter().cloned());
        for row in first_rows.iter_mut() {
            for column in &added {
                row.insert(column.clone(), Value::String(String::new()));
            }
        }
        let copy = |into: &mut Record, from: &Record| {
            for column in &added {
                into.insert(
                    column.clone(),
                    from.get(column).cloned().unwrap_or_default(),
                );
            }
        };
        if keys.is_empty() {
            for (into, from) in first_rows.iter_mut().zip(&rows) {
                copy(into, from);
            }
        } else {
            for into in first_rows.iter_mut() {
                if let Some(from) = rows
                    .iter()
                    .find(|r| keys.iter().all(|k| r.get(k) == into.get(k)))
                {
                    copy(into, from);
                }
            }
        }
    }
    Ok(table.map(|(_, rows)| rows).unwrap_or_default())
}

/// The records of `text`, or why not.
pub fn records(
    template: &Template,
    text: &str,
    deadline: Instant,
) -> Result<Vec<Map<String, Value>>, String> {
    let mut parser = template.parser();
    let mut rows = Vec::new();
    // A Fillup value writes into records already made, which a piece's
    // parse hands back: such a template takes the text whole (bounded by
    // MAX_PARSE_BYTES and the regex engine, not the deadline).
    let whole = template
        .values()
        .iter()
        .any(|v| v.has_option(ValueOption::Fillup));
    let fail = |e: textfsm_core::ParseError| format!("the template stopped the parse: {e}");
    if whole {
        rows = parser.parse_text(text).map_err(fail)?;
    } else {
        let lines: Vec<&str> = text.lines().collect();
        for (n, piece) in lines.chunks(LINES_PER_PIECE).enumerate() {
            if Instant::now() >= deadline {
                return Err(format!(
                    "the parse ran past its {} s deadline after {} of {} lines; narrow the command",
                    PARSE_DEADLINE.as_secs(),
                    n * LINES_PER_PIECE,
                    lines.len()
                ));
            }
            // Each line ended by its own newline: joined without a last
            // one, a piece whose last line is empty would lose that line
            // (the engine splits as `str::lines`, which drops a final
            // empty line), and an empty line often ends a table.
            let mut joined = piece.join("\n");
            joined.push('\n');
            rows.extend(parser.parse_text_with_eof(&joined, false).map_err(fail)?);
        }
        rows.extend(parser.parse_text_with_eof("", true).map_err(fail)?);
    }
    let defs = template.values();
    Ok(rows
        .into_iter()
        .map(|row| {
            defs.iter()
                .zip(row)
                .map(|(def, value)| {
                    (
                        def.name.to_lowercase(),
                        json(value, def.has_option(ValueOption::List)),
                    )
                })
                .collect()
        })
        .collect())
}

/// A value as Python textfsm gives it: a string, or a list for a List
/// value (whose items are objects when its regex has named groups).
fn json(value: textfsm_core::Value, list: bool) -> Value {
    use textfsm_core::Value as V;
    match value {
        V::Single(s) if !list => Value::String(s),
        V::Single(s) => Value::Array(vec![Value::String(s)]),
        V::Empty if list => Value::Array(Vec::new()),
        V::Empty => Value::String(String::new()),
        V::List(items) => Value::Array(
            items
                .into_iter()
                .map(|item| match item {
                    ListItem::String(s) => Value::String(s),
                    ListItem::Dict(d) => {
                        Value::Object(d.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
                    }
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn found(templates: &[&str]) -> Found {
        Found {
            name: "t.textfsm".into(),
            templates: templates
                .iter()
                .map(|t| {
                    (
                        "t.textfsm".to_owned(),
                        Arc::new(Template::parse_str(t).unwrap()),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn a_parse_past_its_deadline_stops_and_says_so() {
        let f = found(&["Value A (\\S+)\n\nStart\n  ^${A} -> Record\n"]);
        let text = "x\n".repeat(1000);
        let o = parse_until(&f, &text, Instant::now());
        assert_eq!(o.parsed, None);
        assert!(o.note.unwrap().contains("deadline"));
        let o = parse_output(&f, &text);
        assert_eq!(o.parsed.unwrap().len(), 1000);
    }

    #[test]
    fn pieces_give_the_records_the_whole_text_gives() {
        // Filldown across the 64-line pieces, a List, and the EOF record.
        let t = "Value Filldown H (h\\d+)\nValue List L (l\\d+)\nValue R (r\\d+)\n\n\
                 Start\n  ^${H}\n  ^${L}\n  ^${R} -> Record\n";
        let mut text = String::new();
        for i in 0..300 {
            if i % 50 == 0 {
                text.push_str(&format!("h{i}\n"));
            }
            text.push_str(&format!("l{i}\nl{i}\nr{i}\n"));
        }
        text.push_str("l9999\n");
        let template = Template::parse_str(t).unwrap();
        let whole: Vec<Record> = template
            .parser()
            .parse_text(&text)
            .unwrap()
            .into_iter()
            .map(|row| {
                template
                    .values()
                    .iter()
                    .zip(row)
                    .map(|(d, v)| {
                        (
                            d.name.to_lowercase(),
                            json(v, d.has_option(ValueOption::List)),
                        )
                    })
                    .collect()
            })
            .collect();
        let pieces = records(&template, &text, Instant::now() + Duration::from_secs(60)).unwrap();
        assert_eq!(pieces.len(), 301);
        assert_eq!(pieces, whole);
        assert_eq!(pieces[299]["h"], "h250");
        assert_eq!(pieces[300]["l"], serde_json::json!(["l9999"]));
    }

    #[test]
    fn an_empty_line_that_ends_a_piece_still_reaches_the_template() {
        // The empty line ending a table sends the parse back to Start,
        // where the next table's header is known; the 64th line is empty.
        let t = "Value Name (\\S+)\n\nStart\n  ^Table -> Table\n  ^. -> Error\n\n\
                 Table\n  ^${Name}\\s*$$ -> Record\n  ^\\s*$$ -> Start\n";
        let template = Template::parse_str(t).unwrap();
        let mut text = String::from("Table\n");
        for i in 0..62 {
            text.push_str(&format!("row{i}\n"));
        }
        assert_eq!(text.lines().count(), LINES_PER_PIECE - 1);
        text.push_str("\nTable\nlast\n");
        let pieces = records(&template, &text, Instant::now() + Duration::from_secs(60)).unwrap();
        assert_eq!(pieces.len(), 63);
        assert_eq!(pieces[62]["name"], "last");
        // As the whole text gives them.
        assert_eq!(template.parser().parse_text(&text).unwrap().len(), 63);
    }

    #[test]
    fn an_optional_group_that_takes_no_part_adds_none_to_a_list_as_python_does() {
        // Python textfsm appends None, which CliTable gives as "None"; a
        // plain value is left empty.
        let f = found(&["Value List P (\\d+)\nValue S (\\S+)\nValue A (\\S+)\n\n\
                         Start\n  ^ip ${A}(\\s+pref\\s+${P})?(\\s+${S})?$$ -> Continue\n  \
                         ^end -> Record\n"]);
        let o = parse_output(&f, "ip a pref 1\nip b\nip c pref 3 x\nend\n");
        let parsed = o.parsed.unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0]["p"], serde_json::json!(["1", "None", "3"]));
        assert_eq!(parsed[0]["s"], "x");
        assert_eq!(parsed[0]["a"], "c");
    }

    #[test]
    fn a_record_whose_values_matched_empty_text_is_kept_as_python_keeps_it() {
        // A record nothing was assigned to is dropped; one of "" is not.
        let f = found(&["Value D (\\S*)\n\nStart\n  ^desc:${D}$$ -> Record\n  ^end -> Record\n"]);
        let o = parse_output(&f, "desc:\nend\ndesc:uplink\n");
        assert_eq!(
            o.parsed.unwrap(),
            vec![
                serde_json::json!({"d": ""}),
                serde_json::json!({"d": "uplink"})
            ]
        );
    }

    #[test]
    fn a_rule_matches_from_the_lines_start_in_every_branch_as_python_does() {
        // Python matches a rule with re.match: "Adjacency" further on in a
        // line is not the rule's second branch.
        let f = found(&["Value N (\\S+)\n\nStart\n  ^VRF|Adjacency ${N} -> Record\n"]);
        let o = parse_output(&f, "Adjacency a\n  Adjacency b\nVRF\n");
        assert_eq!(o.parsed.unwrap(), vec![serde_json::json!({"n": "a"})]);
    }

    #[test]
    fn a_second_template_joins_on_the_first_ones_keys() {
        let f = found(&[
            "Value Key P (p\\d)\nValue S (up|down)\n\nStart\n  ^${P} ${S} -> Record\n",
            "Value P (p\\d)\nValue D (\\w+)\n\nStart\n  ^${P} is ${D} -> Record\n",
        ]);
        let o = parse_output(&f, "p1 up\np2 down\np2 is core\n");
        let parsed = o.parsed.unwrap();
        assert_eq!(parsed[0]["d"], "");
        assert_eq!(parsed[1]["d"], "core");
    }
}
