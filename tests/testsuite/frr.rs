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
        Self::start_configured(program, "").await
    }

    /// As [`Router::start`], `port_keys` added to the port's table.
    async fn start_under(port_keys: &str) -> Router {
        Self::start_configured(|vtysh| vtysh, port_keys).await
    }

    async fn start_configured(program: impl FnOnce(Program) -> Program, port_keys: &str) -> Router {
        let frr = Frr::start().await.expect("FRRouting");
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("r1");
        let line = ProgramLine::spawn(program(frr.vtysh()), &link).expect("program line");
        let config = format!(
            "[ports.r1]\ndevice = {:?}\npreset = \"frr\"\n{port_keys}",
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

/// `terminal paginate` sends vtysh's output through its pager (Debian's
/// `/usr/bin/pager`, less where it is installed); the preset answers each
/// page and the end, and what the agent gets is still what vtysh prints
/// directly. `no terminal paginate` and `terminal length 0` (the
/// preset's paging off) turn it off again; `terminal no paginate`, as
/// IOS habits would write it, is no vtysh command, and `terminal length
/// 24` says its value is ignored but turns the pager on.
#[tokio::test]
async fn paged_output_is_answered_and_the_same_as_unpaged() {
    if !here() {
        return;
    }
    let router = configured().await;
    let reply = router.command("terminal paginate").await;
    assert_eq!(text(&reply, "output"), "", "{reply}");
    let paged = router.same_as_direct("show running-config").await;
    // 24 rows a page, more than 280 lines: a dozen pages and the end.
    assert!(num(&paged, "auto_replies") >= 10, "{paged}");
    let reply = router.same_as_direct("show ip prefix-list LAB").await;
    assert!(num(&reply, "auto_replies") >= 4, "{reply}");
    // The prompt follows less's erase of `(END)` (`\r ESC[K`), which the
    // prompt text does not carry.
    assert_eq!(text(&reply, "prompt_text"), "r1# ", "{reply}");

    let reply = router.command("terminal no paginate").await;
    assert_eq!(
        reply["error_lines"],
        json!(["% Unknown command: terminal no paginate"]),
        "{reply}"
    );
    let reply = router.command("no terminal paginate").await;
    assert_eq!(reply["error_lines"], json!([]), "{reply}");
    let unpaged = router.same_as_direct("show running-config").await;
    assert_eq!(num(&unpaged, "auto_replies"), 0, "{unpaged}");
    assert_eq!(text(&unpaged, "output"), text(&paged, "output"));

    router.command("terminal paginate").await;
    let reply = router.command("terminal length 0").await;
    assert_eq!(reply["error_lines"], json!([]), "{reply}");
    let reply = router.same_as_direct("show running-config").await;
    assert_eq!(
        num(&reply, "auto_replies"),
        0,
        "length 0 is paging off: {reply}"
    );
    // Any other length says it is deprecated and ignored, and turns the
    // pager on.
    let reply = router.command("terminal length 24").await;
    assert_eq!(
        reply["error_lines"],
        json!([
            "% The \"terminal length\" command is deprecated and its value is ignored.",
            "% Please use \"terminal paginate\" instead with OS TTY length handling."
        ]),
        "{reply}"
    );
    let reply = router.same_as_direct("show running-config").await;
    assert!(num(&reply, "auto_replies") >= 10, "{reply}");
}

/// With `VTYSH_PAGER=more` set when vtysh starts, paging is on from the
/// first command and util-linux `more` is the pager: it stops at a
/// standout `--More--` and ends every command, even one that printed
/// nothing, with an empty page and `(END)`. The preset gets through all
/// of it and the table is, line for line, what vtysh prints unpaged (the
/// empty page's lines are trailing empty lines, which cleanup drops).
#[tokio::test]
async fn vtysh_pager_more_is_answered_from_the_first_command() {
    if !here() {
        return;
    }
    let router = Router::start_with(|vtysh| vtysh.env("VTYSH_PAGER", "more")).await;
    // vtysh's start already waits in more, at an empty page, before
    // anyone connected: keys typed now would be more's commands (`s`
    // skips lines), and no prompt is on screen. set_mode wakes it. Each
    // prompt follows more's erase of its `(END)` (`\r ESC[K`), which the
    // prompt text does not carry.
    let status = router.ok("status", json!({})).await;
    assert_eq!(status["mode"], Value::Null, "{status}");
    let reply = router
        .ok("set_mode", json!({"mode": "privileged", "timeout": 30}))
        .await;
    assert_eq!(text(&reply, "prompt"), "r1#", "{reply}");
    let lines = lab_config();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    router.frr.vtysh_c(&refs).await.expect("configure");
    let reply = router.same_as_direct("show ip prefix-list LAB").await;
    assert!(num(&reply, "auto_replies") >= 4, "{reply}");
    let reply = router
        .ok("set_mode", json!({"mode": "config", "timeout": 30}))
        .await;
    assert_eq!(text(&reply, "prompt"), "r1(config)#", "{reply}");
    let reply = router
        .ok("set_mode", json!({"mode": "privileged", "timeout": 30}))
        .await;
    assert_eq!(text(&reply, "prompt"), "r1#", "{reply}");
}

/// Every mode through set_mode: vtysh starts privileged, `disable` is
/// exec (`r1>`), `configure terminal` is config; and the nested blocks
/// (`router bgp`, `address-family`, `interface`) are config mode by their
/// prompts.
#[tokio::test]
async fn set_mode_reaches_each_mode_and_nested_blocks_are_config() {
    if !here() {
        return;
    }
    let router = Router::start().await;
    let mode = |v: &Value| v["mode"].as_str().map(str::to_owned);
    for (target, prompt) in [
        ("exec", "r1>"),
        ("privileged", "r1#"),
        ("config", "r1(config)#"),
        ("exec", "r1>"),
        ("config", "r1(config)#"),
        ("privileged", "r1#"),
    ] {
        let reply = router
            .ok("set_mode", json!({"mode": target, "timeout": 30}))
            .await;
        assert_eq!(text(&reply, "mode"), target, "{reply}");
        assert_eq!(text(&reply, "prompt").trim(), prompt, "{reply}");
    }
    router.ok("set_mode", json!({"mode": "config"})).await;
    for (line, prompt) in [
        ("router bgp 65001", "r1(config-router)#"),
        ("address-family ipv4 unicast", "r1(config-router-af)#"),
        ("exit-address-family", "r1(config-router)#"),
        ("exit", "r1(config)#"),
        ("interface lo", "r1(config-if)#"),
        ("route-map RM permit 10", "r1(config-route-map)#"),
    ] {
        let reply = router.command(line).await;
        assert_eq!(
            text(&reply, "prompt_text").trim(),
            prompt,
            "{line}: {reply}"
        );
        let status = router.ok("status", json!({})).await;
        assert_eq!(mode(&status).as_deref(), Some("config"), "{line}: {status}");
    }
    // `end` from three levels down.
    let reply = router.ok("set_mode", json!({"mode": "privileged"})).await;
    assert_eq!(text(&reply, "prompt").trim(), "r1#", "{reply}");
}

/// send_config through the real parser: nested blocks, one line vtysh
/// refuses among good ones, a verdict per line, configuration mode always
/// left; then save_config runs `write memory`, which writes the
/// integrated frr.conf with what was configured.
#[tokio::test]
async fn send_config_judges_each_line_and_save_writes_frr_conf() {
    if !here() {
        return;
    }
    let router = configured().await;
    let lines = [
        "ip route 192.168.50.0/24 Null0",
        "router bgp 65001",
        "neighbor 10.0.0.99 remote-as 65099",
        "neighbor 10.0.0.99 description lab-peer",
        "address-family ipv4 unicast",
        "network 192.168.50.0/24",
        "neighbr 10.0.0.99 activate",
        "exit-address-family",
        "exit",
        "ip prefix-list EDGE seq 5 permit 192.168.50.0/24",
    ];
    let reply = router
        .ok(
            "send_config",
            json!({"lines": lines, "stop_on_error": false, "timeout": 30}),
        )
        .await;
    let verdicts = reply["verdicts"].as_array().expect("verdicts");
    assert_eq!(verdicts.len(), lines.len(), "{reply}");
    for (verdict, line) in verdicts.iter().zip(lines) {
        let refused = line.starts_with("neighbr");
        assert_eq!(verdict["line"], line, "{reply}");
        assert_eq!(verdict["ok"], !refused, "{line}: {reply}");
        if refused {
            assert_eq!(
                verdict["error"], "% Unknown command: neighbr 10.0.0.99 activate",
                "{reply}"
            );
        } else {
            assert_eq!(verdict["error"], Value::Null, "{line}: {reply}");
        }
    }
    assert_eq!(reply["left_config"], true, "{reply}");
    assert_eq!(text(&reply, "mode"), "privileged", "{reply}");
    assert_eq!(text(&reply, "prompt").trim(), "r1#", "{reply}");
    // The lines after the refused one were applied.
    let running = router.direct("show running-config").await;
    for want in [
        "ip route 192.168.50.0/24 Null0",
        " neighbor 10.0.0.99 description lab-peer",
        "  network 192.168.50.0/24",
        "ip prefix-list EDGE seq 5 permit 192.168.50.0/24",
    ] {
        assert!(running.lines().any(|l| l == want), "{want:?} in {running}");
    }

    // stop_on_error (the default): nothing after the refused line.
    let reply = router
        .ok(
            "send_config",
            json!({"lines": ["ip route 192.168.51.0/24 Null0", "ip route 192.168.52.0/33 Null0", "ip route 192.168.53.0/24 Null0"], "timeout": 30}),
        )
        .await;
    assert_eq!(
        reply["failed_line"], "ip route 192.168.52.0/33 Null0",
        "{reply}"
    );
    assert_eq!(num(&reply, "applied"), 1, "{reply}");
    assert_eq!(text(&reply, "prompt").trim(), "r1#", "{reply}");
    let running = router.direct("show running-config").await;
    assert!(
        running.contains("ip route 192.168.51.0/24 Null0"),
        "{running}"
    );
    assert!(!running.contains("192.168.53.0"), "{running}");

    assert!(!router.frr.config_file().exists(), "nothing saved yet");
    let reply = router.ok("save_config", json!({})).await;
    assert_eq!(reply["ok"], true, "{reply}");
    let saved = std::fs::read_to_string(router.frr.config_file()).expect("frr.conf written");
    // What was saved is the running configuration, from `frr version` on.
    let running = router.direct("show running-config").await;
    let body: Vec<&str> = running
        .lines()
        .skip_while(|l| !l.starts_with("frr version"))
        .take_while(|l| *l != "end")
        .collect();
    let saved_lines: Vec<&str> = saved.lines().collect();
    assert_eq!(saved_lines, body, "frr.conf:\n{saved}");
    assert!(saved_lines.len() > 280, "{saved}");
    assert!(
        saved.contains("\nip route 192.168.50.0/24 Null0\n"),
        "{saved}"
    );
}

/// The guardrails on a router CLI nobody here wrote: under `locked`, the
/// frr preset's `no router <any>` in configuration mode is denied in
/// every spelling and by every path an agent has (a change, a command
/// in the configuration node or in the BGP node, abbreviations, spaces,
/// a tab for vtysh's completion, history recall, a line split across
/// calls, raw bytes), and BGP is still configured afterwards, as vtysh
/// run directly shows; ordinary changes still go through.
#[tokio::test]
async fn no_router_bgp_is_denied_in_every_spelling_and_bgp_stays_configured() {
    if !here() {
        return;
    }
    let router = Router::start_under("policy = \"locked\"\n").await;
    let lines = lab_config();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    router.frr.vtysh_c(&refs).await.expect("configure");
    let bgp_configured = |running: &str| running.lines().any(|l| l == "router bgp 65001");
    assert!(bgp_configured(&router.direct("show running-config").await));

    // A change holding the line: none of its lines is sent.
    let e = router
        .client
        .call(
            "send_config",
            json!({"lines": ["ip route 192.168.60.0/24 Null0", "no router bgp 65001"], "timeout": 30}),
        )
        .await
        .expect("mcp")
        .err();
    assert!(e.starts_with("denied: ") && e.contains("no router"), "{e}");

    router
        .ok("set_mode", json!({"mode": "config", "timeout": 30}))
        .await;
    let mut attempts: Vec<(&str, Value)> = [
        "no router bgp 65001",
        "no router bgp",
        "no rou bgp 65001",
        "no   router   bgp 65001",
        "  no router bgp 65001",
        "NO ROUTER BGP 65001",
        "no r b 65001",
    ]
    .into_iter()
    .map(|c| ("send_command", json!({"command": c, "timeout": 30})))
    .collect();
    attempts.extend([
        // vtysh completes `rou` to `router` on a tab.
        ("send_text", json!({"text": "no rou\tbgp 65001"})),
        // The words split across two calls.
        (
            "send_text",
            json!({"text": "no router", "line_ending": "none"}),
        ),
        // History recall of a line typed before (the lab's own).
        ("send_keys", json!({"keys": ["up", "enter"]})),
        (
            "send_hex",
            json!({"hex": "6e6f20726f75746572206267702036353030310d"}),
        ),
    ]);
    for (tool, args) in &attempts {
        let e = router
            .client
            .call(tool, args.clone())
            .await
            .expect("mcp")
            .err();
        assert!(e.starts_with("denied: "), "{tool} {args}: {e}");
    }
    // In the BGP node too (`r1(config-router)#`).
    let reply = router
        .ok(
            "send_command",
            json!({"command": "router bgp 65001", "timeout": 30}),
        )
        .await;
    assert!(
        text(&reply, "prompt_text").contains("config-router"),
        "{reply}"
    );
    let e = router
        .client
        .call(
            "send_command",
            json!({"command": "no router bgp 65001", "timeout": 30}),
        )
        .await
        .expect("mcp")
        .err();
    assert!(e.starts_with("denied: "), "{e}");
    router
        .ok("set_mode", json!({"mode": "privileged", "timeout": 30}))
        .await;

    let running = router.direct("show running-config").await;
    assert!(bgp_configured(&running), "BGP removed: {running}");
    assert!(!running.contains("192.168.60.0"), "{running}");

    // The allowed side: an ordinary change in the BGP node goes through.
    let reply = router
        .ok(
            "send_config",
            json!({"lines": ["router bgp 65001", "neighbor 10.0.0.77 remote-as 65077", "exit", "ip route 192.168.61.0/24 Null0"], "timeout": 30}),
        )
        .await;
    assert_eq!(num(&reply, "applied"), 4, "{reply}");
    let running = router.direct("show running-config").await;
    assert!(
        running
            .lines()
            .any(|l| l == " neighbor 10.0.0.77 remote-as 65077"),
        "{running}"
    );
    assert!(
        running.contains("ip route 192.168.61.0/24 Null0"),
        "{running}"
    );
    assert!(bgp_configured(&running));
}

/// Python textfsm's answer for `output` of `command` on `platform`, with
/// the templates of `dir` (its `index`): `{"python": records, "error": why}`.
fn python_textfsm(dir: &std::path::Path, platform: &str, command: &str, output: &str) -> Value {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let python = serialgate_testkit::python::python_with(&["textfsm"])
        .expect("the test venv's Python textfsm");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(python)
        .arg(root.join("tests/python/textfsm_fixtures.py"))
        .arg("text")
        .arg(dir)
        .args([platform, command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(output.as_bytes())
        .expect("python reads");
    let out = child.wait_with_output().expect("python ends");
    serde_json::from_slice(&out.stdout).expect("python's JSON")
}

/// A template for FRRouting 8's `show ip route` (vtysh), as a user would
/// put in `templates_dir`: the route code, selected and FIB flags, the
/// prefix, distance and metric, next hop and age.
const FRR_ROUTE: &str = "\
Value Required PROTOCOL ([A-Za-z])
Value SELECTED (>?)
Value FIB (\\*?)
Value NETWORK (\\d+\\.\\d+\\.\\d+\\.\\d+/\\d+)
Value DISTANCE (\\d+)
Value METRIC (\\d+)
Value NEXTHOP (.+?)
Value UPTIME (\\d\\S*)

Start
  ^Codes: -> Codes

Codes
  ^\\s*$$ -> Routes
  ^\\s+\\S

Routes
  ^${PROTOCOL}${SELECTED}${FIB}\\s+${NETWORK}\\s+\\[${DISTANCE}/${METRIC}\\]\\s+${NEXTHOP},\\s+weight\\s+\\d+,\\s+${UPTIME}\\s*$$ -> Record
  ^${PROTOCOL}${SELECTED}${FIB}\\s+${NETWORK}\\s+is\\s+directly\\s+connected,\\s+${NEXTHOP},\\s+${UPTIME}\\s*$$ -> Record
  ^. -> Error
";

/// A template for FRRouting 8's `show ip bgp summary`: the router's id
/// and AS, then one record per neighbour (FRR 8 added the VRF to the
/// title and the PfxSnt and Desc columns, which ntc's VyOS template, made
/// for FRR 7, does not know).
const FRR_BGP_SUMMARY: &str = "\
Value Filldown ROUTER_ID (\\S+)
Value Filldown LOCAL_AS (\\d+)
Value Required NEIGHBOR (\\d+\\.\\d+\\.\\d+\\.\\d+)
Value NEIGHBOR_AS (\\d+)
Value MSG_RCVD (\\d+)
Value MSG_SENT (\\d+)
Value UP_DOWN (\\S+)
Value STATE_PFXRCD (\\S+)
Value PFXSNT (\\S+)
Value DESCRIPTION (.*?)

Start
  ^BGP\\s+router\\s+identifier\\s+${ROUTER_ID},\\s+local\\s+AS\\s+number\\s+${LOCAL_AS}
  ^${NEIGHBOR}\\s+\\d+\\s+${NEIGHBOR_AS}\\s+${MSG_RCVD}\\s+${MSG_SENT}\\s+\\d+\\s+\\d+\\s+\\d+\\s+${UP_DOWN}\\s+${STATE_PFXRCD}\\s+${PFXSNT}\\s*${DESCRIPTION}\\s*$$ -> Record
";

/// Structured output from a real vtysh. No platform of ntc-templates 9.3.0
/// parses FRRouting 8's tables: IOS's templates match no line of them (so
/// `platform = "cisco_ios"` gives empty records, as Python textfsm gives,
/// which would read as "no routes"); that is why the `frr` preset names
/// none and says so. A user's templates for platform `frr` parse both,
/// record for record as Python textfsm parses the same text.
#[tokio::test]
async fn parse_on_vtysh_output_is_python_textfsms_and_needs_frr_templates() {
    if !here() {
        return;
    }
    let commands = ["show ip route", "show ip bgp summary"];
    // The preset as shipped: no platform, and the reason.
    let router = configured_under("").await;
    for command in commands {
        let r = router
            .ok(
                "send_command",
                json!({"command": command, "parse": true, "timeout": 30}),
            )
            .await;
        assert_eq!(r["parsed"], Value::Null, "{r}");
        assert!(text(&r, "parse_note").contains("names no platform"), "{r}");
    }
    drop(router);

    // The closest ntc platform parses nothing out of vtysh's tables.
    let ntc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/ntc");
    let router = configured_under("platform = \"cisco_ios\"\n").await;
    for command in commands {
        let r = router
            .ok(
                "send_command",
                json!({"command": command, "parse": true, "timeout": 30}),
            )
            .await;
        assert!(text(&r, "output").lines().count() > 10, "{r}");
        assert_eq!(r["parsed"], json!([]), "{r}");
        let py = python_textfsm(&ntc, "cisco_ios", command, text(&r, "output"));
        assert_eq!(py, json!({"python": [], "error": null}), "{command}");
    }
    drop(router);

    // A user's templates for platform frr: records, as Python's.
    let templates = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        templates.path().join("frr_show_ip_route.textfsm"),
        FRR_ROUTE,
    )
    .unwrap();
    std::fs::write(
        templates.path().join("frr_show_ip_bgp_summary.textfsm"),
        FRR_BGP_SUMMARY,
    )
    .unwrap();
    std::fs::write(
        templates.path().join("index"),
        "Template, Hostname, Platform, Command\n\n\
         frr_show_ip_route.textfsm, .*, frr, sh[[ow]] ip r[[oute]]\n\
         frr_show_ip_bgp_summary.textfsm, .*, frr, sh[[ow]] ip b[[gp]] s[[ummary]]\n",
    )
    .unwrap();
    let keys = format!(
        "platform = \"frr\"\n[server]\ntemplates_dir = {:?}\n",
        templates.path().display()
    );
    let router = configured_under(&keys).await;
    let mut parsed = Vec::new();
    for command in commands {
        let r = router
            .ok(
                "send_command",
                json!({"command": command, "parse": true, "timeout": 30}),
            )
            .await;
        let py = python_textfsm(templates.path(), "frr", command, text(&r, "output"));
        assert_eq!(py["error"], Value::Null, "{py}");
        assert_eq!(
            r["parsed"], py["python"],
            "{command}: serialgate and Python textfsm disagree"
        );
        parsed.push(r["parsed"].as_array().cloned().unwrap_or_default());
    }
    let (routes, peers) = (&parsed[0], &parsed[1]);
    assert_eq!(routes.len(), 150, "{routes:?}");
    assert_eq!(routes[0]["network"], "10.20.0.0/24");
    assert_eq!(routes[0]["protocol"], "S");
    assert_eq!(routes[0]["nexthop"], "unreachable (blackhole)");
    assert_eq!(peers.len(), 10, "{peers:?}");
    assert_eq!(peers[0]["router_id"], "10.255.0.1");
    assert_eq!(peers[0]["local_as"], "65001");
    assert_eq!(peers[0]["neighbor"], "10.0.0.2");
    assert_eq!(peers[0]["neighbor_as"], "65002");
    assert_eq!(peers[0]["description"], "peer-2");
}

/// [`configured`], with `port_keys` added to the port's table.
async fn configured_under(port_keys: &str) -> Router {
    let router = Router::start_under(port_keys).await;
    let lines = lab_config();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    router.frr.vtysh_c(&refs).await.expect("configure");
    router
}
