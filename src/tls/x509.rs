//! What `check-config` and the log say about a certificate: its subject
//! and when it expires, read from the DER bytes, sans I/O.
//!
//! Only the first fields of `TBSCertificate` are walked (version, serial,
//! signature algorithm, issuer, validity, subject); rustls checks the rest
//! when it uses the certificate. Every length is checked against what is
//! left, so a damaged file gives an error, never a panic.

use serde::Serialize;

/// A certificate's subject and expiry, as shown to the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertSummary {
    /// The subject's common name and organisation, `CN=gw.lab, O=Lab`
    /// (the attributes an operator recognises; others are left out).
    pub subject: String,
    /// The end of the validity, `2027-12-03 14:00:00 UTC`.
    pub not_after: String,
    /// The same as seconds since the Unix epoch, to say how long is left.
    pub not_after_unix: i64,
}

impl CertSummary {
    /// Reads the subject and the expiry of one DER certificate.
    pub fn of(der: &[u8]) -> Result<CertSummary, String> {
        let (cert, _) = element(der, SEQUENCE).ok_or("not a DER certificate")?;
        let (tbs, _) = element(cert, SEQUENCE).ok_or("no TBSCertificate")?;
        let mut rest = tbs;
        if rest.first() == Some(&0xa0) {
            rest = element(rest, 0xa0).ok_or("a damaged version")?.1;
        }
        let rest = element(rest, INTEGER).ok_or("no serial number")?.1;
        let rest = element(rest, SEQUENCE).ok_or("no signature algorithm")?.1;
        let rest = element(rest, SEQUENCE).ok_or("no issuer")?.1;
        let (validity, rest) = element(rest, SEQUENCE).ok_or("no validity")?;
        let (subject, _) = element(rest, SEQUENCE).ok_or("no subject")?;
        let after = element(validity, any_tag)
            .map(|(_, r)| r)
            .and_then(time)
            .ok_or("a damaged validity")?;
        Ok(CertSummary {
            subject: name(subject),
            not_after: after.0,
            not_after_unix: after.1,
        })
    }

    /// `expires 2027-12-03 14:00:00 UTC (in 365 days)` (whole days left),
    /// or `EXPIRED on …`
    /// when `now_unix` is past it.
    pub fn expiry(&self, now_unix: i64) -> String {
        let left = self.not_after_unix - now_unix;
        if left < 0 {
            format!("EXPIRED on {}", self.not_after)
        } else {
            let days = left / 86_400;
            let unit = if days == 1 { "day" } else { "days" };
            format!("expires {} (in {days} {unit})", self.not_after)
        }
    }
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const OID: u8 = 0x06;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// Matches no tag: [`element`] takes whatever comes.
#[allow(non_upper_case_globals)]
const any_tag: u8 = 0;

/// The content of the element at the start of `der` if its tag is `tag`
/// (any tag for [`any_tag`]), and what follows it.
fn element(der: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, rest) = der.split_first()?;
    if tag != any_tag && found != tag {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// `CN=…, O=…` from a Name: the attributes in the order written.
fn name(mut der: &[u8]) -> String {
    let mut parts = Vec::new();
    while let Some((set, rest)) = element(der, SET) {
        der = rest;
        let mut inner = set;
        while let Some((pair, more)) = element(inner, SEQUENCE) {
            inner = more;
            let Some((oid, value)) = element(pair, OID) else {
                continue;
            };
            let label = match oid {
                [0x55, 0x04, 0x03] => "CN",
                [0x55, 0x04, 0x0a] => "O",
                [0x55, 0x04, 0x0b] => "OU",
                _ => continue,
            };
            if let Some((text, _)) = element(value, any_tag) {
                let text: String = String::from_utf8_lossy(text)
                    .chars()
                    .take(128)
                    .map(|c| if c.is_control() { '?' } else { c })
                    .collect();
                parts.push(format!("{label}={text}"));
            }
        }
    }
    if parts.is_empty() {
        "(no common name)".to_owned()
    } else {
        parts.join(", ")
    }
}

/// A UTCTime or GeneralizedTime ending in `Z`: shown, and in Unix seconds.
fn time(der: &[u8]) -> Option<(String, i64)> {
    let tag = *der.first()?;
    let (text, _) = element(der, any_tag)?;
    let text = std::str::from_utf8(text).ok()?;
    let digits = text.strip_suffix('Z')?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (year, rest) = match (tag, digits.len()) {
        (UTC_TIME, 12) => {
            let yy: i64 = digits[..2].parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &digits[2..])
        }
        (GENERALIZED_TIME, 14) => (digits[..4].parse().ok()?, &digits[4..]),
        _ => return None,
    };
    let field = |i: usize| rest[i..i + 2].parse::<i64>().ok();
    let (month, day, hour, minute, second) =
        (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let unix = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some((
        format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02} UTC"),
        unix,
    ))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_count_from_the_epoch() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
    }

    #[test]
    fn both_time_forms_are_read() {
        let utc = [&[UTC_TIME, 13][..], b"270102030405Z"].concat();
        assert_eq!(time(&utc).unwrap().0, "2027-01-02 03:04:05 UTC".to_owned());
        let general = [&[GENERALIZED_TIME, 15][..], b"20500102030405Z"].concat();
        assert_eq!(time(&general).unwrap().0, "2050-01-02 03:04:05 UTC");
        assert!(time(&[UTC_TIME, 3, b'9', b'9', b'Z']).is_none());
    }

    #[test]
    fn the_expiry_counts_whole_days_and_says_expired() {
        let summary = CertSummary {
            subject: "CN=x".into(),
            not_after: "2027-01-02 03:04:05 UTC".into(),
            not_after_unix: 10 * 86_400,
        };
        assert_eq!(
            summary.expiry(0),
            "expires 2027-01-02 03:04:05 UTC (in 10 days)"
        );
        assert!(summary.expiry(9 * 86_400 - 1).ends_with("(in 1 day)"));
        assert_eq!(
            summary.expiry(10 * 86_400 + 1),
            "EXPIRED on 2027-01-02 03:04:05 UTC"
        );
    }

    #[test]
    fn damaged_certificates_are_errors_not_panics() {
        for bad in [
            &b""[..],
            &[0x30],
            &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
            &[0x30, 0x02, 0x30, 0x05],
        ] {
            assert!(CertSummary::of(bad).is_err());
        }
    }
}
