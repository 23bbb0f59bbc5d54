//! Dates for the clocks, uptimes and boot messages the simulated devices
//! print, from the system time without a calendar library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Year, month (1–12) and day of `days` since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for dates on or after the epoch).
pub fn civil_from_days(days: u64) -> (u64, usize, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month as usize, day)
}

/// `now` as `2024-03-04 10:01:02 UTC`.
pub fn utc_text(now: SystemTime) -> String {
    let seconds = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let (year, month, day) = civil_from_days(seconds / 86_400);
    format!(
        "{year}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_dates() {
        let at = UNIX_EPOCH + Duration::from_secs(1_796_034_063);
        assert_eq!(utc_text(at), "2026-11-30 10:21:03 UTC");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
