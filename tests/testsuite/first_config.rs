//! A newcomer's first config, as `serialgate check-config` answers it: the
//! usual first mistakes (ports written as a TOML list, a port's key at the
//! top of the file, a misspelt preset, a device not plugged in yet) each
//! get a message that names the fix, and the corrected file passes.

use std::process::Output;

use serialgate_testkit::binary::binary;
use tempfile::TempDir;

/// `serialgate check-config` on `text`, written to a file of the test's.
async fn check(dir: &TempDir, text: &str) -> Output {
    let path = dir.path().join("serialgate.toml");
    std::fs::write(&path, text).expect("write config");
    let run = tokio::process::Command::new(binary())
        .arg("check-config")
        .arg(&path)
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(serialgate_testkit::daemon::WITHIN, run)
        .await
        .expect("check-config ends in time")
        .expect("run check-config")
}

fn refused_with(out: &Output, wants: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted: {stderr}");
    for want in wants {
        assert!(stderr.contains(want), "{want:?} not in {stderr}");
    }
}

#[tokio::test]
async fn each_first_mistake_is_answered_with_its_fix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let device = dir.path().join("ttyUSB0");
    std::fs::write(&device, "").expect("a device path that exists");
    let device = device.display().to_string();

    let listed = check(
        &dir,
        &format!("[[ports]]\nname = \"rtr1\"\ndevice = {device:?}\npreset = \"cisco-ios\"\n"),
    )
    .await;
    refused_with(
        &listed,
        &[
            "serialgate.toml:1:1:",
            "write `[ports.rtr1]`",
            "without its `name` key",
        ],
    );

    let at_top = check(&dir, &format!("device = {device:?}\nbaud = 9600\n")).await;
    refused_with(
        &at_top,
        &[
            "serialgate.toml:1:1:",
            "`device` is a port's setting",
            "`[ports.rtr1]`",
        ],
    );

    let server_key = check(&dir, "listen = \"127.0.0.1:7301\"\n").await;
    refused_with(
        &server_key,
        &["`listen` is a server setting: move it under `[server]`"],
    );

    let misspelt = check(
        &dir,
        &format!("[ports.rtr1]\ndevice = {device:?}\npreset = \"cisco-iso\"\n"),
    )
    .await;
    refused_with(
        &misspelt,
        &[
            "serialgate.toml:3:10:",
            "unknown preset \"cisco-iso\" (did you mean \"cisco-ios\"?)",
        ],
    );

    // The fix the messages named passes.
    let fixed = check(
        &dir,
        &format!("[ports.rtr1]\ndevice = {device:?}\npreset = \"cisco-ios\"\n"),
    )
    .await;
    let stdout = String::from_utf8_lossy(&fixed.stdout);
    assert!(
        fixed.status.success(),
        "{}",
        String::from_utf8_lossy(&fixed.stderr)
    );
    assert!(stdout.contains("rtr1: "), "{stdout}");
    assert!(!stdout.contains("note:"), "{stdout}");

    // A device not there yet is fine, and said.
    let unplugged = dir.path().join("ttyUSB9").display().to_string();
    let later = check(
        &dir,
        &format!("[ports.rtr1]\ndevice = {unplugged:?}\npreset = \"cisco-ios\"\n"),
    )
    .await;
    let stdout = String::from_utf8_lossy(&later.stdout);
    assert!(
        later.status.success(),
        "{}",
        String::from_utf8_lossy(&later.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "note: ports.rtr1.device {unplugged:?} does not exist now"
        )) && stdout.contains("serialgate list-ports"),
        "{stdout}"
    );
}

/// A token with a short secret is accepted with a note of what it costs
/// (a held address keeps it out too) and how to make a long one; a long
/// secret gets no note.
#[tokio::test]
async fn a_short_token_secret_is_noted_with_how_to_make_a_long_one() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let device = dir.path().join("ttyUSB0");
    std::fs::write(&device, "").expect("a device path that exists");
    let config = |secret: &str| {
        let file = dir.path().join("agent.secret");
        std::fs::write(&file, format!("{secret}\n")).expect("write the secret");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
        format!(
            "[ports.rtr1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n[[tokens]]\nname = \"agent\"\n\
             secret_file = \"agent.secret\"\nports = [\"*\"]\naccess = \"write\"\n",
            device.display()
        )
    };
    let short = check(&dir, &config("hunter2-hunter2")).await;
    let stdout = String::from_utf8_lossy(&short.stdout);
    assert!(
        short.status.success(),
        "{}",
        String::from_utf8_lossy(&short.stderr)
    );
    assert!(
        stdout.contains("note: token \"agent\"'s secret is shorter than 32 characters")
            && stdout.contains("openssl rand -hex 32 > agent.secret"),
        "{stdout}"
    );
    let long = check(&dir, &config(&"0123456789abcdef".repeat(4))).await;
    let stdout = String::from_utf8_lossy(&long.stdout);
    assert!(long.status.success(), "{stdout}");
    assert!(!stdout.contains("note:"), "{stdout}");
}
