//! `serialgate demo`: a simulated Cisco switch on a pseudo-terminal, the
//! gateway as a child process, and a short agent session through the real
//! MCP path, printed call by call.

use std::path::PathBuf;

use serde_json::{Value, json};

use serialgate_sim::{self as sim, Profile};

mod client;
use client::{DemoClient, Outcome};

/// Lines of an output shown before "… N more lines".
const SHOWN_LINES: usize = 12;

/// Runs the demo; fails if any step does not give what it should.
pub async fn run() -> anyhow::Result<()> {
    let device = sim::spawn(Profile::CiscoIos, None).await?;
    let dir = private_dir()?;
    let config = dir.join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "# written by `serialgate demo`\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
            device.path().display()
        ),
    )?;
    println!(
        "simulated Cisco switch on {}; config {}\n",
        device.path().display(),
        config.display()
    );
    let exe: PathBuf = std::env::current_exe()?;
    let mut client = DemoClient::spawn(&exe, &config).await?;
    let outcome = session(&mut client).await;
    client.close().await?;
    let _ = std::fs::remove_dir_all(&dir);
    outcome?;
    println!("demo finished: every call went through MCP to the simulated switch and back.");
    Ok(())
}

/// A new directory of this user's alone (mode 700) under the temp dir for
/// the demo's config. Created, never reused: a directory someone else made
/// first at the same name (the temp dir is shared) fails the demo instead
/// of handing them its config.
fn private_dir() -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir =
        std::env::temp_dir().join(format!("serialgate-demo-{}-{nanos:09}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

async fn session(c: &mut DemoClient) -> anyhow::Result<()> {
    let ports = step(c, "list_ports", json!({})).await?;
    for p in ports["ports"].as_array().into_iter().flatten() {
        println!(
            "   port {} on {} is {} ({})",
            p["name"], p["device"], p["state"], p["preset"]
        );
    }
    let conn = step(c, "connect", json!({"port": "sw1"})).await?;
    println!(
        "   connection {} prompt {}",
        conn["connection"], conn["prompt"]
    );
    // Wake the console and log in to privileged mode, as an engineer would.
    step(c, "send_text", json!({"text": ""})).await?;
    show(
        &step(c, "read_until_prompt", json!({"timeout": 5})).await?,
        "output",
    );
    step(c, "send_text", json!({"text": "enable"})).await?;
    show(
        &step(
            c,
            "read_until_prompt",
            json!({"prompt": "Password:", "timeout": 5}),
        )
        .await?,
        "output",
    );
    step(c, "send_text", json!({"text": "cisco"})).await?;
    show(
        &step(c, "read_until_prompt", json!({"timeout": 5})).await?,
        "prompt_text",
    );
    show(
        &step(c, "send_command", json!({"command": "show version"})).await?,
        "output",
    );
    let run = step(
        c,
        "send_command",
        json!({"command": "show running-config", "timeout": 30}),
    )
    .await?;
    show(&run, "output");
    println!(
        "   {} lines, {} pages answered (--More-- → space), {} ms",
        lines(&run["output"]),
        run["auto_replies"],
        run["elapsed_ms"]
    );
    anyhow::ensure!(
        run["matched"] == true,
        "show running-config did not reach the prompt"
    );
    let bad = step(c, "send_command", json!({"command": "show interfacez"})).await?;
    show(&bad, "output");
    println!("   error_lines: {}", bad["error_lines"]);
    anyhow::ensure!(
        bad["error_lines"].as_array().is_some_and(|a| !a.is_empty()),
        "the invalid command was not reported"
    );
    let status = step(c, "status", json!({})).await?;
    println!(
        "   state {} head {} unread {} blocked_prompt {}",
        status["state"], status["head"], status["unread_bytes"], status["blocked_prompt"]
    );
    Ok(())
}

/// Calls a tool, prints the call, and returns its structured result.
async fn step(c: &mut DemoClient, tool: &str, args: Value) -> anyhow::Result<Value> {
    println!("→ {tool} {args}");
    match c.call(tool, args).await? {
        Outcome::Ok(v) => Ok(v),
        Outcome::Err(e) => {
            println!("← error: {e}");
            anyhow::bail!("{tool} failed: {e}")
        }
    }
}

fn lines(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.lines().count())
}

/// Prints a text field of a result, shortened.
fn show(v: &Value, field: &str) {
    let text = v[field].as_str().unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    for line in all.iter().take(SHOWN_LINES) {
        println!("   │ {}", line.replace('\r', "␍"));
    }
    if all.len() > SHOWN_LINES {
        println!("   │ … {} more lines", all.len() - SHOWN_LINES);
    }
}
