//! Named break sequences, as conserver's `break` strings: what a console
//! sends to get a boot loader's attention when a plain BREAK will not do
//! (a console server that cannot pass one, a device that wants bytes). A
//! sequence is a string of bytes with escapes: `\z` a real BREAK, `\d` a
//! pause, `\r` `\n` `\t` `\b` `\a` `\f` `\v` `\\` `\^` `\ooo` (octal), `^X`
//! a control character (`^?` DEL).

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

/// How long `\z` holds the line low, and how long `\d` waits.
pub const BREAK_STEP: Duration = Duration::from_millis(250);
/// Longest sequence as written.
pub const MAX_SEQUENCE_LEN: usize = 256;
/// Most time a sequence may take (its BREAKs and pauses).
pub const MAX_SEQUENCE_TIME: Duration = Duration::from_secs(10);
/// Most sequences a preset or port names.
pub const MAX_SEQUENCES: usize = 16;
/// Longest sequence name.
pub const MAX_NAME_LEN: usize = 32;

/// One step of a break sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakStep {
    /// A serial BREAK of this many milliseconds.
    Break(u64),
    /// These bytes.
    Bytes(Vec<u8>),
    /// A pause of this many milliseconds.
    Pause(u64),
}

/// A named break sequence: as written, and parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BreakSequence {
    /// The string as written in the config.
    pub text: String,
    /// What it sends, in order.
    #[serde(skip)]
    #[schemars(skip)]
    pub steps: Vec<BreakStep>,
}

/// A preset's or port's break sequences by name.
pub type BreakSequences = BTreeMap<String, BreakSequence>;

/// Parses the sequences of one table, checking names and limits.
pub fn parse_all(table: &BTreeMap<String, String>) -> Result<BreakSequences, String> {
    if table.len() > MAX_SEQUENCES {
        return Err(format!(
            "{} sequences; at most {MAX_SEQUENCES}",
            table.len()
        ));
    }
    let mut out = BTreeMap::new();
    for (name, text) in table {
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if name.is_empty() || name.len() > MAX_NAME_LEN || !name.chars().all(plain) {
            return Err(format!(
                "the name {} is not a sequence name: 1-{MAX_NAME_LEN} letters, digits, '_' or '-'",
                crate::error::shown(name)
            ));
        }
        let steps = parse(text).map_err(|e| format!("{name}: {e}"))?;
        out.insert(
            name.clone(),
            BreakSequence {
                text: text.clone(),
                steps,
            },
        );
    }
    Ok(out)
}

/// Parses one sequence string.
pub fn parse(text: &str) -> Result<Vec<BreakStep>, String> {
    if text.is_empty() || text.len() > MAX_SEQUENCE_LEN {
        return Err(format!(
            "a sequence is 1 to {MAX_SEQUENCE_LEN} characters, got {}",
            text.len()
        ));
    }
    let mut steps = Vec::new();
    let mut bytes = Vec::new();
    let mut time = Duration::ZERO;
    let flush = |steps: &mut Vec<BreakStep>, bytes: &mut Vec<u8>| {
        if !bytes.is_empty() {
            steps.push(BreakStep::Bytes(std::mem::take(bytes)));
        }
    };
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\\' => {
                let Some(&e) = chars.get(i) else {
                    return Err("it ends with a lone \\; write \\\\ for a backslash".into());
                };
                i += 1;
                match e {
                    'z' => {
                        flush(&mut steps, &mut bytes);
                        steps.push(BreakStep::Break(BREAK_STEP.as_millis() as u64));
                        time += BREAK_STEP;
                    }
                    'd' => {
                        flush(&mut steps, &mut bytes);
                        steps.push(BreakStep::Pause(BREAK_STEP.as_millis() as u64));
                        time += BREAK_STEP;
                    }
                    'r' => bytes.push(b'\r'),
                    'n' => bytes.push(b'\n'),
                    't' => bytes.push(b'\t'),
                    'b' => bytes.push(0x08),
                    'a' => bytes.push(0x07),
                    'f' => bytes.push(0x0c),
                    'v' => bytes.push(0x0b),
                    '\\' => bytes.push(b'\\'),
                    '^' => bytes.push(b'^'),
                    '0'..='7' => {
                        let mut value = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match chars.get(i).and_then(|c| c.to_digit(8)) {
                                Some(d) => {
                                    value = value * 8 + d;
                                    i += 1;
                                }
                                None => break,
                            }
                        }
                        let byte = u8::try_from(value)
                            .map_err(|_| format!("\\{value:o} is over \\377"))?;
                        bytes.push(byte);
                    }
                    other => {
                        return Err(format!(
                            "unknown escape \\{}; use \\z (BREAK), \\d (pause), \\r, \\n, \\t, \\b, \\a, \\f, \\v, \\\\, \\^ or \\ooo",
                            other.escape_default()
                        ));
                    }
                }
            }
            '^' => {
                let Some(&e) = chars.get(i) else {
                    return Err("it ends with a lone ^; write \\^ for a caret".into());
                };
                i += 1;
                match e {
                    '?' => bytes.push(0x7f),
                    '@'..='_' => bytes.push(e as u8 - b'@'),
                    'a'..='z' => bytes.push(e as u8 - b'a' + 1),
                    other => {
                        return Err(format!(
                            "^{} is no control character; use ^@ to ^_, ^a to ^z or ^?",
                            other.escape_default()
                        ));
                    }
                }
            }
            c if c.is_ascii() => bytes.push(c as u8),
            c => {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    flush(&mut steps, &mut bytes);
    if time > MAX_SEQUENCE_TIME {
        return Err(format!(
            "it takes {} ms of BREAKs and pauses; at most {}",
            time.as_millis(),
            MAX_SEQUENCE_TIME.as_millis()
        ));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, parse as parse_config};
    use super::*;

    #[test]
    fn a_bad_sequence_in_the_file_is_an_error_at_its_place() {
        assert_error(
            "[presets.p]\nbreak_sequences = { a = '\\q' }\n",
            "2:19",
            &["presets.p.break_sequences: a: unknown escape \\q"],
        );
        assert_error(
            "[ports.x]\ndevice = \"/dev/ttyUSB0\"\nbreak_sequences = { \"b c\" = '\\z' }\n",
            "3:19",
            &["ports.x.break_sequences: the name \"b c\" is not a sequence name"],
        );
        let c = parse_config(
            "[presets.p]\nextends = \"cisco-ios\"\nbreak_sequences = { alt = '\\r~^b' }\n[ports.x]\ndevice = \"/dev/ttyUSB0\"\npreset = \"p\"\n",
        );
        assert_eq!(
            c.ports["x"].break_sequences["alt"].steps,
            vec![BreakStep::Bytes(b"\r~\x02".to_vec())]
        );
    }

    #[test]
    fn conserver_strings() {
        assert_eq!(parse("\\z").unwrap(), vec![BreakStep::Break(250)]);
        assert_eq!(
            parse("\\r~^b").unwrap(),
            vec![BreakStep::Bytes(b"\r~\x02".to_vec())]
        );
        assert_eq!(
            parse("\\r\\d~\\d^B\\033^?\\^x").unwrap(),
            vec![
                BreakStep::Bytes(b"\r".to_vec()),
                BreakStep::Pause(250),
                BreakStep::Bytes(b"~".to_vec()),
                BreakStep::Pause(250),
                BreakStep::Bytes(b"\x02\x1b\x7f^x".to_vec()),
            ]
        );
        assert_eq!(
            parse("#.reset -x\\r").unwrap(),
            vec![BreakStep::Bytes(b"#.reset -x\r".to_vec())]
        );
    }

    #[test]
    fn bad_strings_say_what_to_write() {
        for (bad, says) in [
            ("", "1 to 256"),
            ("\\", "lone \\"),
            ("^", "lone ^"),
            ("\\q", "unknown escape \\q"),
            ("^1", "no control character"),
            ("\\777", "over \\377"),
            (&"\\d".repeat(41), "at most 10000"),
            (&"x".repeat(257), "1 to 256"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
        let mut table = BTreeMap::new();
        table.insert("bad name\n".to_owned(), "\\z".to_owned());
        assert!(
            parse_all(&table)
                .unwrap_err()
                .contains("not a sequence name")
        );
        let table: BTreeMap<String, String> = (0..17)
            .map(|i| (format!("s{i}"), "\\z".to_owned()))
            .collect();
        assert!(parse_all(&table).unwrap_err().contains("at most 16"));
    }
}
