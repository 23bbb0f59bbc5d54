//! A Linux console as engineers use one: a real `/bin/login` on its own
//! terminal (respawned like a getty), a real `bash` after it, `sudo`,
//! for an account each test creates (`useradd`, `chpasswd`) and removes.
//! The daemon logs in with the port's stored credentials, reads a clean
//! prompt, answers sudo's password prompt from them, and returns output
//! line by line as the command prints it run directly.
//!
//! Tests run as root (here and in CI); elsewhere they say why they are
//! skipped, and under `CI` a missing tool or privilege fails them.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use serialgate_testkit::client::GateClient;
use serialgate_testkit::program::{Program, ProgramLine};
use serialgate_testkit::rig::{Rig, text};
use tempfile::TempDir;

/// Whether login, bash, sudo and the account tools are here and the tests
/// run as root; says why not when they are not (and fails under CI).
pub(crate) fn here() -> bool {
    let tools = [
        "/bin/login",
        "/bin/bash",
        "/usr/bin/sudo",
        "/usr/sbin/useradd",
        "/usr/sbin/chpasswd",
        "/usr/sbin/userdel",
    ];
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| !Path::new(t).exists())
        .collect();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if missing.is_empty() && root {
        return true;
    }
    eprintln!("skipped: needs root and {missing:?} (.ci/run installs sudo)");
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run these as root with login, bash and sudo"
    );
    false
}

/// A login account made for one test, with a sudo rule; removed with its
/// home and the rule when dropped.
pub(crate) struct TestUser {
    pub name: String,
    pub password: String,
    sudoers: std::path::PathBuf,
}

impl TestUser {
    /// A new account with bash, a home from /etc/skel and a password;
    /// `sudo` lets it run anything as root after its password.
    pub(crate) fn create() -> TestUser {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let name = format!("sgt{}x{n}", std::process::id());
        let password = format!("Pw-{}-{n}-lab", std::process::id());
        let status = Command::new("/usr/sbin/useradd")
            .args(["-m", "-s", "/bin/bash", &name])
            .status()
            .expect("useradd");
        assert!(status.success(), "useradd {name}");
        let user = TestUser {
            sudoers: Path::new("/etc/sudoers.d").join(&name),
            name,
            password,
        };
        let mut chpasswd = Command::new("/usr/sbin/chpasswd")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("chpasswd");
        {
            use std::io::Write;
            let mut stdin = chpasswd.stdin.take().expect("stdin");
            writeln!(stdin, "{}:{}", user.name, user.password).expect("write chpasswd");
        }
        assert!(chpasswd.wait().expect("chpasswd").success());
        std::fs::write(&user.sudoers, format!("{} ALL=(ALL) ALL\n", user.name)).expect("sudoers");
        std::fs::set_permissions(&user.sudoers, std::fs::Permissions::from_mode(0o440))
            .expect("chmod sudoers");
        user
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.sudoers);
        // The session's processes are gone with the program line; -f
        // removes the account even if one lingers.
        let _ = Command::new("/usr/sbin/userdel")
            .args(["-r", "-f", &self.name])
            .output();
    }
}

/// The machine's short hostname, as bash's `\h` shows it.
pub(crate) fn short_hostname() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    host.trim().split('.').next().unwrap_or_default().to_owned()
}

/// A real login on a serial line, the daemon with it as port `vm`
/// (preset linux) and `user`'s credentials stored for it.
async fn console(dir: &TempDir, user: &TestUser, term: &str) -> (ProgramLine, GateClient) {
    let link = dir.path().join("vm");
    let line = ProgramLine::spawn(Program::new("/bin/login").env("TERM", term), &link)
        .expect("program line");
    let credentials = dir.path().join("vm.credentials");
    std::fs::write(
        &credentials,
        format!(
            "username = {:?}\npassword = {:?}\n",
            user.name, user.password
        ),
    )
    .expect("credentials");
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let config = format!(
        "[ports.vm]\ndevice = {:?}\npreset = \"linux\"\ncredentials = \"vm.credentials\"\n",
        link.display()
    );
    let client = Rig::client_with(dir, &config).await;
    client
        .call("connect", json!({"port": "vm"}))
        .await
        .expect("mcp")
        .ok();
    (line, client)
}

async fn ok(client: &GateClient, tool: &str, args: serde_json::Value) -> serde_json::Value {
    client.call(tool, args).await.expect("mcp").ok()
}

/// What `script` in bash prints run directly, as lines.
fn run_directly(script: &str) -> Vec<String> {
    let out = Command::new("/bin/bash")
        .args(["-c", script])
        .output()
        .expect("bash");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end().to_owned())
        .collect()
}

/// set_mode logs in through the real /bin/login with the stored
/// credentials; the prompt bash draws (bracketed paste, the xterm window
/// title) is read as the person at the console reads it, everywhere it
/// is shown; and a long coloured listing comes back as the plain listing.
#[tokio::test]
async fn stored_credentials_log_in_through_real_login_to_a_clean_bash_prompt() {
    if !here() {
        return;
    }
    let user = TestUser::create();
    let dir = tempfile::tempdir().expect("temp dir");
    let (_line, client) = console(&dir, &user, "xterm").await;
    let want_prompt = format!("{}@{}:~$", user.name, short_hostname());

    let r = ok(&client, "set_mode", json!({"mode": "exec", "timeout": 20})).await;
    assert_eq!(r["mode"], "exec", "{r}");
    assert_eq!(text(&r, "prompt"), want_prompt, "{r}");
    let steps = r["steps"].to_string();
    assert!(steps.contains("sent the stored password"), "{steps}");
    assert!(!steps.contains(&user.password), "{steps}");

    // The raw log holds what bash really sent before its prompt.
    let raw = ok(
        &client,
        "read_output",
        json!({"cursor": 0, "max_bytes": 65536}),
    )
    .await;
    let raw = text(&raw, "output");
    assert!(
        raw.contains("\x1b[?2004h") && raw.contains("\x1b]0;"),
        "bash draws its prompt with control sequences: {raw:?}"
    );
    assert!(!raw.contains(&user.password), "the password never shows");

    let status = ok(&client, "status", json!({})).await;
    assert_eq!(status["mode"], "exec", "{status}");
    assert!(status["blocked_prompt"].is_null(), "{status}");

    let listing = "ls -l --color=always /usr/bin | head -n 60";
    let r = ok(
        &client,
        "send_command",
        json!({"command": listing, "timeout": 20}),
    )
    .await;
    assert_eq!(r["matched"], true, "{r}");
    assert_eq!(text(&r, "prompt_text"), format!("{want_prompt} "), "{r}");
    let got: Vec<&str> = text(&r, "output").lines().collect();
    let want = run_directly("ls -l --color=never /usr/bin | head -n 60");
    assert_eq!(got, want, "the listing as printed, without its colours");
    assert!(
        r["error_lines"].as_array().is_some_and(Vec::is_empty),
        "{r}"
    );

    // The web view and the mode driver read the same clean prompt.
    let r = ok(&client, "set_mode", json!({"mode": "exec"})).await;
    assert_eq!(text(&r, "prompt"), want_prompt, "{r}");
}

/// `set_mode privileged` is a root shell: the mode driver sends `sudo -i`
/// and answers sudo's password prompt with the stored password, which is
/// in no result and no raw output; `set_mode exec` leaves it. A `sudo`
/// the caller types is not answered: a program the caller started could
/// print the same prompt, so the command ends at it and nothing is typed.
#[tokio::test]
async fn sudo_for_privileged_mode_is_answered_and_a_callers_sudo_is_not() {
    if !here() {
        return;
    }
    let user = TestUser::create();
    let dir = tempfile::tempdir().expect("temp dir");
    let (_line, client) = console(&dir, &user, "vt220").await;
    let r = ok(
        &client,
        "set_mode",
        json!({"mode": "privileged", "timeout": 20}),
    )
    .await;
    assert_eq!(r["mode"], "privileged", "{r}");
    assert_eq!(
        text(&r, "prompt"),
        format!("root@{}:~#", short_hostname()),
        "{r}"
    );
    let steps = r["steps"].to_string();
    assert!(
        steps.contains("sudo -i") && steps.contains("password for sudo"),
        "{steps}"
    );
    let r = ok(
        &client,
        "send_command",
        json!({"command": "id -un", "timeout": 20}),
    )
    .await;
    assert_eq!(text(&r, "output"), "root", "{r}");
    let r = ok(&client, "set_mode", json!({"mode": "exec", "timeout": 20})).await;
    assert_eq!(
        text(&r, "prompt"),
        format!("{}@{}:~$", user.name, short_hostname()),
        "{r}"
    );

    let r = ok(
        &client,
        "send_command",
        json!({"command": "sudo -k id -un", "timeout": 20}),
    )
    .await;
    assert_eq!(r["matched"], true, "{r}");
    assert_eq!(
        text(&r, "prompt_text").trim(),
        format!("[sudo] password for {}:", user.name),
        "{r}"
    );
    let raw = ok(
        &client,
        "read_output",
        json!({"cursor": 0, "max_bytes": 65536}),
    )
    .await;
    assert!(!text(&raw, "output").contains(&user.password));
    assert!(!raw.to_string().contains(&user.password));
}
