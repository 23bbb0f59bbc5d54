//! IOS's safety nets for changes made from afar: `configure terminal revert
//! timer N` (IOS XE's Configuration Rollback Confirmed Change: unless
//! `configure confirm` comes in time, the running configuration returns to
//! a backup made on entry) and `reload in N` (a reload that `reload cancel`
//! stops).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::CiscoSwitch;
use super::timers::Revert;
use crate::cli::civil_from_days;

/// Where the backups of a revert timer go when no `archive path` is set.
const DEFAULT_ARCHIVE: &str = "flash:/archive";
/// Who IOS says armed or confirmed a revert timer.
const USER: &str = "User: console(Priv: 15, View: 0)";

impl CiscoSwitch {
    /// `configure terminal revert timer MINUTES`: backs up the running
    /// configuration and arms the rollback (a timer already armed keeps
    /// its backup and starts again). Returns what IOS prints before the
    /// configuration banner; the log messages follow the prompt.
    pub(super) fn arm_revert(&mut self, minutes: u32) -> Vec<u8> {
        let now = Instant::now();
        let deadline = now + self.minute * minutes;
        let warning = (minutes > 1).then(|| deadline - self.minute);
        if let Some(revert) = &mut self.revert {
            revert.deadline = deadline;
            revert.warning = warning;
            return Vec::new();
        }
        let path = self
            .running
            .child_value("archive", "path")
            .unwrap_or(DEFAULT_ARCHIVE)
            .to_owned();
        let file = format!("{path}-{}-{}", file_stamp((self.wall)()), self.backups);
        self.backups += 1;
        self.log(&format!(
            "%ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_BACKUP: Backing up current running config to {file}"
        ));
        self.log(&format!(
            "%ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_START_ABSTIMER: {USER}: Scheduled to rollback to config {file} in {minutes} minutes"
        ));
        let text = format!(
            "Rollback Confirmed Change: Backing up current running config to {file}\r\n\r\n"
        );
        self.revert = Some(Revert {
            deadline,
            warning,
            backup: self.running.clone(),
            file,
        });
        text.into_bytes()
    }

    /// `configure confirm`: keeps the changes and disarms the timer.
    pub(super) fn confirm(&mut self) -> Vec<u8> {
        if self.revert.take().is_none() {
            return b"% No Rollback Confirmed Change pending\r\n".to_vec();
        }
        self.log(&format!(
            "%ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_CONFIRM: {USER}: Confirm the configuration change"
        ));
        Vec::new()
    }

    /// The revert timer at `now`: the warning a minute before, then the
    /// rollback to the backup.
    pub(super) fn tick_revert(&mut self, now: Instant, out: &mut Vec<u8>) {
        let Some(revert) = &mut self.revert else {
            return;
        };
        if revert.warning.is_some_and(|at| at <= now) {
            revert.warning = None;
            let file = revert.file.clone();
            self.pending.push(
                "Rollback Confirmed Change: Rollback will begin in one minute.\r\nEnter \"configure confirm\" if you wish to keep what you've configured".to_owned(),
            );
            self.log(&format!(
                "%ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_WARNING_ABSTIMER: System will rollback to config file {file} on expiration of absolute timer"
            ));
            return self.flush_if_idle(out);
        }
        if revert.deadline > now {
            return;
        }
        let Some(revert) = self.revert.take() else {
            return;
        };
        self.running = revert.backup;
        self.log(&format!(
            "%ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_ROLLBACK_START: Start rolling to: {}",
            revert.file
        ));
        self.flush_if_idle(out);
    }
}

/// A backup file's time stamp as IOS names it: `Nov-30-10-21-03.045`,
/// `May--4-14-05-34.882` (the day padded with a dash).
fn file_stamp(now: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let (_, month, day) = civil_from_days(seconds / 86_400);
    format!(
        "{}-{:->2}-{:02}-{:02}-{:02}.{:03}",
        MONTHS[month - 1],
        day,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
        since_epoch.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::{config_i, privileged, send};
    use super::*;
    use std::time::Duration;

    /// Fires the switch's next timer; what it printed.
    fn fire(switch: &mut CiscoSwitch) -> String {
        let mut out = Vec::new();
        let deadline = switch.next_deadline().expect("a timer is armed");
        switch.tick(deadline, &mut out);
        String::from_utf8(out).unwrap()
    }

    const STAMP: &str = "*Nov 30 10:21:03.045";
    const FILE: &str = "flash:/archive-Nov-30-10-21-03.045-0";

    #[test]
    fn an_unconfirmed_revert_timer_rolls_back() {
        let mut switch = privileged();
        let before = switch.configuration();
        assert_eq!(
            send(&mut switch, "configure terminal revert timer 2\r"),
            format!(
                "configure terminal revert timer 2\r\nRollback Confirmed Change: Backing up current running config to {FILE}\r\n\r\n\
                 Enter configuration commands, one per line.  End with CNTL/Z.\r\nSW1(config)#\r\n\
                 {STAMP}: %ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_BACKUP: Backing up current running config to {FILE}\r\n\
                 {STAMP}: %ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_START_ABSTIMER: User: console(Priv: 15, View: 0): Scheduled to rollback to config {FILE} in 2 minutes\r\n\
                 SW1(config)#"
            )
        );
        send(&mut switch, "hostname changed\r");
        assert_eq!(
            send(&mut switch, "end\r"),
            format!("end\r\n{}", config_i("changed#"))
        );
        send(&mut switch, "sh");
        assert_eq!(
            fire(&mut switch),
            format!(
                "\r\nRollback Confirmed Change: Rollback will begin in one minute.\r\n\
                 Enter \"configure confirm\" if you wish to keep what you've configured\r\n\
                 {STAMP}: %ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_WARNING_ABSTIMER: System will rollback to config file {FILE} on expiration of absolute timer\r\n\
                 changed#sh"
            )
        );
        assert_eq!(
            fire(&mut switch),
            format!(
                "\r\n{STAMP}: %ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_ROLLBACK_START: Start rolling to: {FILE}\r\nSW1#sh"
            )
        );
        assert_eq!(switch.configuration(), before);
        assert_eq!(switch.next_deadline(), None);
    }

    #[test]
    fn configure_confirm_keeps_the_changes() {
        let mut switch = privileged();
        send(&mut switch, "conf t revert timer 1\rhostname kept\rend\r");
        assert!(switch.next_deadline().is_some());
        assert_eq!(
            send(&mut switch, "configure confirm\r"),
            format!(
                "configure confirm\r\nkept#\r\n{STAMP}: %ARCHIVE_DIFF-5-ROLLBK_CNFMD_CHG_CONFIRM: User: console(Priv: 15, View: 0): Confirm the configuration change\r\nkept#"
            )
        );
        assert_eq!(switch.next_deadline(), None);
        assert_eq!(switch.hostname(), "kept");
        assert_eq!(
            send(&mut switch, "configure confirm\r"),
            "configure confirm\r\n% No Rollback Confirmed Change pending\r\nkept#"
        );
        assert!(send(&mut switch, "conf t revert timer 121\r").contains("% Invalid input"));
    }

    #[test]
    fn reload_in_is_scheduled_cancelled_or_fires() {
        let mut switch = privileged();
        assert_eq!(
            send(&mut switch, "reload in 5\r"),
            "reload in 5\r\nReload scheduled in 5 minutes by console\r\nProceed with reload? [confirm]"
        );
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1#");
        assert!(send(&mut switch, "show reload\r").contains("(in 5 minutes) by console"));
        assert_eq!(
            send(&mut switch, "reload cancel\r"),
            "reload cancel\r\n\r\n***\r\n*** --- SHUTDOWN ABORTED ---\r\n***\r\n\r\nSW1#"
        );
        assert_eq!(switch.next_deadline(), None);
        send(&mut switch, "conf t\rhostname gone\rend\rreload in 1\ry");
        let boot = fire(&mut switch);
        assert!(
            boot.starts_with("\r\n\r\n***\r\n*** --- SHUTDOWN NOW ---\r\n***\r\n"),
            "{boot:?}"
        );
        assert!(boot.ends_with("Press RETURN to get started!\r\n"));
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1>");
    }

    #[test]
    fn backup_file_stamps() {
        let at = UNIX_EPOCH + Duration::from_millis(1_796_034_063_045);
        assert_eq!(file_stamp(at), "Nov-30-10-21-03.045");
        let may = UNIX_EPOCH + Duration::from_secs(1_746_367_534);
        assert_eq!(file_stamp(may), "May--4-14-05-34.000");
    }
}
