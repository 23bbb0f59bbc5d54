//! Where a config error is: byte spans turned into `file:line:col`, the
//! key path a serde error happened under, and hints for syntax errors.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::IgnoredAny;
use toml::Spanned;

/// A config error at a place in the file. Displays as
/// `file:line:col: message`, or `file: message` when it has no place
/// (`line` 0: the file could not be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file name as given.
    pub file: String,
    /// 1-based line; 0 when the error has no place in the file.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub col: usize,
    /// What is wrong, naming the key (e.g. `ports.core-sw1.baud: ...`).
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}

/// What to do about a TOML error the parser's message leaves open: a
/// repeated key or table, or a syntax error (a file cut short, a typo).
/// Empty for errors about values, whose messages already name the key and
/// what it expects.
pub(super) fn syntax_hint(text: &str, message: &str) -> &'static str {
    if message.contains("duplicate key") {
        "; each key and each [table] may appear once: remove the repeated one or merge the two"
    } else if toml::from_str::<toml::Table>(text).is_err() {
        "; this is not valid TOML (a file cut short, or a typo): fix it, config/example.toml shows the syntax"
    } else {
        ""
    }
}

/// The text being parsed, to turn byte spans into `file:line:col`.
pub(super) struct Source<'a> {
    /// The file name as given, what errors call the file.
    pub(super) file: &'a str,
    /// The whole text of the file.
    pub(super) text: &'a str,
}

impl Source<'_> {
    /// An error at the start of `span`, its column counted in characters.
    pub(super) fn error(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        let offset = span.start.min(self.text.len());
        let offset = (0..=offset)
            .rev()
            .find(|&i| self.text.is_char_boundary(i))
            .unwrap_or(0);
        let before = &self.text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        ConfigError {
            file: self.file.to_owned(),
            line: before.matches('\n').count() + 1,
            col: before[line_start..].chars().count() + 1,
            message: message.into(),
        }
    }

    /// A TOML syntax or deserialization error, its message on one line and
    /// prefixed with the key path it happened under.
    pub(super) fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let message = e
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        let message = if message.is_empty() {
            "TOML syntax error".to_owned()
        } else {
            message
        };
        match e.span() {
            Some(span) => {
                let message = match self.text.get(span.clone()) {
                    Some(key) if message == "duplicate key" => {
                        duplicate_key(self.text, span.start, key)
                    }
                    _ => message,
                };
                let message = match key_path(self.text, span.start) {
                    Some(path) => format!("{}: {message}", cut(&path)),
                    None => message,
                };
                self.error(span, message)
            }
            None => ConfigError {
                file: self.file.to_owned(),
                line: 0,
                col: 0,
                message,
            },
        }
    }
}

/// The config's tables with each key's value span, to name the key a serde
/// error happened under (serde's messages say what is wrong but not where).
/// Deserialized leniently; None when even this fails.
#[derive(Deserialize)]
struct Shape {
    server: Option<Spanned<ShapeTable>>,
    tokens: Option<Vec<Spanned<ShapeTable>>>,
    presets: Option<BTreeMap<String, Spanned<ShapeTable>>>,
    ports: Option<BTreeMap<String, Spanned<ShapeTable>>>,
    policies: Option<BTreeMap<String, Spanned<ShapeTable>>>,
}

type ShapeTable = BTreeMap<String, Spanned<IgnoredAny>>;

/// The dotted key path (e.g. `ports.core-sw1.baud`) of the value at
/// `offset`, or of the table it lies in (for an unknown key, a missing
/// field).
fn key_path(text: &str, offset: usize) -> Option<String> {
    let Ok(shape) = toml::from_str::<Shape>(text) else {
        return line_key_path(text, offset);
    };
    let mut tables: Vec<(String, &Spanned<ShapeTable>)> = Vec::new();
    if let Some(t) = &shape.server {
        tables.push(("server".into(), t));
    }
    for (i, t) in shape.tokens.iter().flatten().enumerate() {
        tables.push((format!("tokens[{i}]"), t));
    }
    for (section, map) in [
        ("presets", &shape.presets),
        ("ports", &shape.ports),
        ("policies", &shape.policies),
    ] {
        for (name, t) in map.iter().flatten() {
            tables.push((format!("{section}.{}", toml_key(name)), t));
        }
    }
    let inside = |span: Range<usize>| span.contains(&offset);
    for (path, table) in &tables {
        for (key, value) in table.get_ref() {
            if inside(value.span()) {
                return Some(format!("{path}.{}", toml_key(key)));
            }
        }
    }
    // A key none of whose values holds the offset (an unknown key, a
    // missing field) is in the table around it: an inline table's span
    // holds its keys; a `[header]` table's span may end with its header,
    // so then the table whose header is the last one above the offset.
    let under_header = |span: Range<usize>| {
        span.start <= offset
            && text
                .get(span.end.min(offset)..offset)
                .is_some_and(|between| {
                    !between
                        .lines()
                        .skip(1)
                        .any(|l| l.trim_start().starts_with('['))
                })
    };
    tables
        .iter()
        .find(|(_, t)| inside(t.span()))
        .or_else(|| tables.iter().find(|(_, t)| under_header(t.span())))
        .map(|(path, _)| path.clone())
}

/// `name` (a key, a table, a key path from the file) cut to
/// [`crate::error::SHOWN_MAX`] characters, so that an error about a huge
/// key does not repeat it whole.
fn cut(name: &str) -> String {
    match name.char_indices().nth(crate::error::SHOWN_MAX) {
        None => name.to_owned(),
        Some((at, _)) => format!("{}…", &name[..at]),
    }
}

/// The parser's "duplicate key" with the key it found again at `offset`
/// and, for a table header, the table it repeats a key of (each [`cut`]).
fn duplicate_key(text: &str, offset: usize, key: &str) -> String {
    let key = cut(key);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = text[line_start..offset].trim_start();
    match before.strip_prefix('[') {
        Some(table) => {
            let table = cut(table
                .trim_start_matches('[')
                .trim()
                .trim_end_matches('.')
                .trim());
            if table.is_empty() {
                format!("duplicate key `{key}`")
            } else {
                format!("duplicate key `{key}` in table `{table}`")
            }
        }
        None => format!("duplicate key `{key}`"),
    }
}

/// Fallback of [`key_path`] when the tables cannot be read with spans (a
/// table made by dotted keys has none): the key on the offset's line before
/// its `=`, under the nearest table header above it.
fn line_key_path(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    let eq = line.find('=')?;
    let key = line[..eq].trim();
    if key.is_empty() || key.starts_with('[') || key.starts_with('#') {
        return None;
    }
    let header = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| {
            let l = l.split(']').next().unwrap_or(l);
            l.trim_start_matches('[').trim().to_owned()
        });
    Some(match header {
        Some(h) if !h.is_empty() => format!("{h}.{key}"),
        _ => key.to_owned(),
    })
}

/// A key as written in TOML: bare when it can be, quoted otherwise.
pub(super) fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

/// The regex crate's message without its multi-line drawing of the pattern.
pub(super) fn regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => {
            let detail: Vec<&str> = s
                .lines()
                .filter_map(|l| l.trim().strip_prefix("error:"))
                .map(str::trim)
                .collect();
            if detail.is_empty() {
                s.lines().map(str::trim).collect::<Vec<_>>().join(" ")
            } else {
                detail.join("; ")
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn a_repeated_key_or_table_is_named_and_cut() {
        assert_error(
            "[ports.a]\nbaud = 1\nbaud = 2\n",
            "3:1",
            &["duplicate key `baud`"],
        );
        assert_error(
            "[ports.a]\n[ports.a]\n",
            "2:8",
            &["duplicate key `a` in table `ports`"],
        );
        let long = "k".repeat(5000);
        let text = format!("{long} = 1\n{long} = 2\n");
        let Err(error) = crate::config::Config::parse(&text, "cfg.toml") else {
            panic!("a repeated key was accepted");
        };
        assert!(
            error.message.contains(&format!("`{}…`", "k".repeat(80))),
            "{error}"
        );
        assert!(error.message.len() < 1000, "{error}");
    }

    #[test]
    fn syntax_error() {
        assert_error("[server]\nlisten = \n", "2:10", &[]);
        assert_error(
            "[ports\n",
            "1:7",
            &["unclosed table, expected `]`", "not valid TOML"],
        );
    }

    #[test]
    fn columns_count_characters() {
        assert_error(
            "# é€\n[ports.a]\ndevice = \"/dev/ttyUSB0\" # ü\nbaud = \"ü\"\n",
            "4:8",
            &["ports.a.baud"],
        );
        assert_error("x = \"é\"; y\n", "1:8", &[]);
    }

    #[test]
    fn dotted_keys_are_named_too() {
        assert_error(
            "ports.a.device = 3\n",
            "1:18",
            &["ports.a.device: invalid type: integer `3`, expected a string"],
        );
        assert_error(
            "[ports]\na.device = \"/dev/ttyUSB0\"\na.baud = \"x\"\n",
            "3:10",
            &["ports.a.baud: invalid type"],
        );
        assert_error(
            "server = 3\n",
            "1:10",
            &["server: invalid type: integer `3`, expected a [server] table"],
        );
    }
}
