//! FRRouting as the device: zebra, staticd and bgpd started by the test
//! (the test kit's `frr`, isolated in a directory and namespaces of their
//! own), real vtysh on a program line behind the daemon, preset `frr`.
//! What an agent gets must be what vtysh prints when run directly
//! (`vtysh -c`) against the same daemons, line for line, with paging off
//! and with it on; modes, configuration and saving go through the real
//! parser and the real `write memory`.

use serde_json::{Value, json};
use serialgate_testkit::GateClient;
use serialgate_testkit::frr::{self, Frr};
use serialgate_testkit::program::{Program, ProgramLine};
use serialgate_testkit::rig::{Rig, num, text};
use tempfile::TempDir;

/// Whether FRRouting is here; says why not when it is not. Under CI a
/// missing FRRouting fails the test instead (`.ci/run` installs it).
fn here() -> bool {
    match frr::installed() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("skipped: {why} (.ci/run installs frr)");
            assert!(std::env::var_os("CI").is_none(), "CI must have FRRouting");
            false
        }
    }
}

/// Running FRRouting, vtysh on a line at `<dir>/r1` and the daemon with
/// that as port `r1` (preset frr), connected.
struct Router {
    frr: Frr,
    _line: ProgramLine,
    client: GateClient,
    _dir: TempDir,
}

impl Router {
    async fn start() -> Router {
        Self::start_with(|vtysh| vtysh).await
    }

    /// As [`Router::start`], vtysh's program changed by `program` first
    /// (an environment variable).
    async fn start_with(program: impl FnOnce(Program) -> Program) -> Router {
        let frr = Frr::start().await.expect("FRRouting");
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("r1");
        let line = ProgramLine::spawn(program(frr.vtysh()), &link).expect("program line");
        let config = format!(
            "[ports.r1]\ndevice = {:?}\npreset = \"frr\"\n",
            link.display()
        );
        let client = Rig::client_with(&dir, &config).await;
        let router = Router {
            frr,
            _line: line,
            client,
            _dir: dir,
        };
        router.ok("connect", json!({"port": "r1"})).await;
        router
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        self.client.call(tool, args).await.expect("mcp").ok()
    }

    /// `send_command`'s reply.
    async fn command(&self, command: &str) -> Value {
        self.ok("send_command", json!({"command": command, "timeout": 30}))
            .await
    }

    /// What vtysh run directly prints for `command`, refused or not.
    async fn direct(&self, command: &str) -> String {
        self.frr.vtysh_output(&[command]).await.expect("vtysh -c").1
    }

    /// Checks that `send_command` gives, line for line, what vtysh run
    /// directly prints; returns the reply.
    async fn same_as_direct(&self, command: &str) -> Value {
        let reply = self.command(command).await;
        let direct = self.direct(command).await;
        let got: Vec<&str> = text(&reply, "output").lines().collect();
        // The cleanup's one documented change: no trailing whitespace on
        // a line (vtysh's `speed 0 `), no empty lines around the output.
        let want: Vec<&str> = direct.lines().map(str::trim_end).collect();
        let want = match want.iter().position(|l| !l.is_empty()) {
            Some(first) => {
                let last = want.iter().rposition(|l| !l.is_empty()).unwrap_or(first);
                want[first..=last].to_vec()
            }
            None => Vec::new(),
        };
        if got != want {
            let first = got
                .iter()
                .zip(&want)
                .position(|(g, w)| g != w)
                .unwrap_or(got.len().min(want.len()));
            panic!(
                "{command}: {} lines through the daemon, {} from vtysh -c; first difference at line {}:\n  daemon: {:?}\n  vtysh:  {:?}\nreply: {reply}",
                got.len(),
                want.len(),
                first + 1,
                got.get(first),
                want.get(first)
            );
        }
        assert!(!want.is_empty(), "{command} printed nothing");
        reply
    }
}

/// A few hundred lines of running configuration: static routes, a
/// prefix-list, BGP with neighbours and networks; put in with vtysh
/// directly, as another operator would have.
fn lab_config() -> Vec<String> {
    let mut lines = vec!["configure terminal".to_owned()];
    lines.extend((0..150).map(|i| format!("ip route 10.{}.{}.0/24 Null0", 20 + i / 100, i % 100)));
    lines.extend((0..100).map(|i| {
        format!(
            "ip prefix-list LAB seq {} permit 10.{i}.0.0/16 le 24",
            5 * (i + 1)
        )
    }));
    lines.push("router bgp 65001".into());
    lines.push("bgp router-id 10.255.0.1".into());
    for n in 2..12 {
        lines.push(format!("neighbor 10.0.0.{n} remote-as 6500{}", n % 10));
        lines.push(format!("neighbor 10.0.0.{n} description peer-{n}"));
    }
    lines.push("address-family ipv4 unicast".into());
    lines.extend((0..20).map(|i| format!("network 10.{}.0.0/16", 100 + i)));
    lines.push("exit-address-family".into());
    lines.push("end".into());
    lines
}

async fn configured() -> Router {
    let router = Router::start().await;
    let lines = lab_config();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    router.frr.vtysh_c(&refs).await.expect("configure");
    router
}

/// What vtysh prints through the daemon is what it prints run directly,
/// for a running configuration of hundreds of lines and for tables, and
/// its errors are the output's error lines.
#[tokio::test]
async fn output_is_what_vtysh_prints_directly() {
    if !here() {
        return;
    }
    let router = configured().await;
    let reply = router.same_as_direct("show running-config").await;
    let output = text(&reply, "output");
    assert!(output.lines().count() > 280, "{output}");
    assert!(
        output.contains("\nip route 10.21.49.0/24 Null0\n"),
        "{output}"
    );
    assert!(output.contains("\nhostname r1\n"), "{output}");
    assert_eq!(text(&reply, "prompt_text").trim(), "r1#", "{reply}");
    assert_eq!(reply["error_lines"], json!([]), "{reply}");
    router.same_as_direct("show ip prefix-list LAB").await;
    router.same_as_direct("show ip bgp").await;
    router.same_as_direct("show interface lo").await;
    for (bad, error) in [
        (
            "show ip bgp nieghbors",
            "% Unknown command: show ip bgp nieghbors",
        ),
        ("show", "% Command incomplete: show"),
        ("sh ip r", "% Ambiguous command: sh ip r"),
        ("show bgp vrf blue summary", "% BGP instance not found"),
        ("show ip ospf", "ospfd is not running"),
    ] {
        let reply = router.same_as_direct(bad).await;
        assert_eq!(reply["error_lines"], json!([error]), "{reply}");
    }
}
