//! The systemd unit and the udev rules are real files an operator installs:
//! check them with systemd's own verifier and udev's syntax.

use serialgate_testkit::rig as common;

use std::process::Command;

#[test]
fn systemd_unit_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let unit = std::fs::read_to_string("config/serialgate.service").unwrap();
    // Point the unit at the binary cargo built, as an install would.
    let unit = unit.replace(
        "/usr/local/bin/serialgate",
        common::binary().to_str().unwrap(),
    );
    let path = dir.path().join("serialgate.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian package systemd; .ci/run installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The unit's own user and group (serialgate) may not exist on a build
    // machine: only a line about them is forgiven, nothing else.
    let problems: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            let about_own_account = l.contains("serialgate")
                && (l.to_ascii_lowercase().contains("user")
                    || l.to_ascii_lowercase().contains("group"));
            !l.trim().is_empty() && !about_own_account
        })
        .collect();
    assert!(
        out.status.success() && problems.is_empty(),
        "systemd-analyze verify: {stderr}"
    );
}

#[test]
fn unit_has_the_promised_settings() {
    let unit = std::fs::read_to_string("config/serialgate.service").unwrap();
    for line in [
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "SupplementaryGroups=dialout",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "DevicePolicy=closed",
        "DeviceAllow=char-ttyUSB rw",
        "LogsDirectory=serialgate",
        "StateDirectory=serialgate",
        "LimitNOFILE=65536",
    ] {
        assert!(unit.lines().any(|l| l == line), "missing {line}");
    }
}

#[test]
fn udev_rules_keep_modemmanager_away() {
    let rules = std::fs::read_to_string("udev/99-serialgate.rules").unwrap();
    let active: Vec<&str> = rules
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert!(
        active
            .iter()
            .any(|l| l.contains(r#"ENV{ID_MM_DEVICE_IGNORE}="1""#))
    );
    // KEY or KEY{attribute}, an operator, a quoted value: udev's syntax.
    let pair_shape =
        regex::Regex::new(r#"^[A-Z_]+(\{[A-Za-z_]+\})?(==|!=|\+=|=)"[^"]*"$"#).unwrap();
    for rule in &active {
        // Every active rule: comma-separated KEY==value / KEY=value pairs.
        for pair in rule.split(", ") {
            assert!(pair_shape.is_match(pair), "bad pair {pair:?} in {rule}");
        }
    }
}
