//! IOS's output filters on a `show` command: `| include REGEX`, `|
//! exclude REGEX` and `| begin REGEX` (unique abbreviations work). The
//! regular expression is the rest of the line after the filter's word,
//! spaces included, matched anywhere in each output line, case-sensitive,
//! as IOS matches it. Lines are filtered before the pager sees them.

use regex::bytes::Regex;

use super::error::Error;
use crate::cli::{Miss, lookup, split_words};

/// A filter: which one, and its expression.
#[derive(Debug)]
pub struct Filter {
    kind: Kind,
    regex: Regex,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Include,
    Exclude,
    Begin,
}

const KINDS: &[(&str, Kind)] = &[
    ("begin", Kind::Begin),
    ("exclude", Kind::Exclude),
    ("include", Kind::Include),
];

/// Splits `line` at its first `|`: the command before it, and the filter
/// after it (errors at their byte in `line`). `None`: no pipe.
pub fn split(line: &[u8]) -> Option<(&[u8], Result<Filter, Error>)> {
    let pipe = memchr::memchr(b'|', line)?;
    let after = &line[pipe + 1..];
    let words = split_words(after);
    let filter = (|| {
        let first = words.first().ok_or(Error::Incomplete)?;
        let kind = *lookup(first.text, KINDS).map_err(|miss| match miss {
            Miss::Ambiguous => Error::Ambiguous(pipe + 1 + first.end()),
            Miss::Unknown => Error::Invalid(pipe + 1 + first.at),
        })?;
        let expression = words.get(1).ok_or(Error::Incomplete)?;
        let text = String::from_utf8_lossy(&after[expression.at..]);
        let regex =
            Regex::new(text.trim_end()).map_err(|_| Error::Invalid(pipe + 1 + expression.at))?;
        Ok(Filter { kind, regex })
    })();
    Some((&line[..pipe], filter))
}

impl Filter {
    /// The lines of `output` (CRLF-ended) that pass.
    pub fn apply(&self, output: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut begun = false;
        for line in output.split_inclusive(|&b| b == b'\n') {
            let text = line.strip_suffix(b"\r\n").unwrap_or(line);
            let pass = match self.kind {
                Kind::Include => self.regex.is_match(text),
                Kind::Exclude => !self.regex.is_match(text),
                Kind::Begin => {
                    begun = begun || self.regex.is_match(text);
                    begun
                }
            };
            if pass {
                out.extend_from_slice(line);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filtered(line: &str, output: &str) -> String {
        let (_, filter) = split(line.as_bytes()).unwrap();
        String::from_utf8(filter.unwrap().apply(output.as_bytes())).unwrap()
    }

    #[test]
    fn include_exclude_and_begin_as_ios_filters() {
        let out =
            "hostname SW1\r\ninterface Vlan1\r\n ip address 10.0.0.2 255.255.255.0\r\nend\r\n";
        assert_eq!(
            filtered("show run | include ip add", out),
            " ip address 10.0.0.2 255.255.255.0\r\n"
        );
        assert_eq!(filtered("show run | i ^host", out), "hostname SW1\r\n");
        assert_eq!(
            filtered("show run | ex ^ ip", out),
            "hostname SW1\r\ninterface Vlan1\r\nend\r\n"
        );
        assert_eq!(filtered("show run | beg Vlan", out), &out[14..]);
        // Case-sensitive, as on IOS.
        assert_eq!(filtered("show run | include HOSTNAME", out), "");
        assert!(split(b"show run").is_none());
    }

    #[test]
    fn a_missing_or_unknown_filter_is_refused_where_ios_refuses_it() {
        let err = |line: &str| split(line.as_bytes()).unwrap().1.unwrap_err();
        assert!(matches!(err("show run |"), Error::Incomplete));
        assert!(matches!(err("show run | include"), Error::Incomplete));
        assert!(matches!(err("show run | grep x"), Error::Invalid(11)));
    }
}
