//! The switch's clock as IOS prints it: `show clock` and the time stamps
//! of log messages.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::cli::civil_from_days;

/// `show clock` for `now`: `*HH:MM:SS.mmm UTC Mon Nov 30 2026` (the `*`
/// says the clock is not set from NTP).
pub(super) fn clock_text(now: SystemTime) -> String {
    const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let days = seconds / 86_400;
    let (year, month, day) = civil_from_days(days);
    let weekday = WEEKDAYS[((days + 4) % 7) as usize]; // 1970-01-01 was a Thursday
    format!(
        "*{:02}:{:02}:{:02}.{:03} UTC {weekday} {} {day} {year}",
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
        since_epoch.subsec_millis(),
        MONTHS[month - 1],
    )
}

/// A log message's timestamp (`service timestamps log datetime msec`):
/// `*Nov 30 10:21:03.045`, the day padded to two places; the `*` says the
/// clock is not set from NTP.
pub(super) fn log_stamp(now: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let (_, month, day) = civil_from_days(seconds / 86_400);
    format!(
        "*{} {day:>2} {:02}:{:02}:{:02}.{:03}",
        MONTHS[month - 1],
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
        since_epoch.subsec_millis(),
    )
}
