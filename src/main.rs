//! The `serialgate` command line: parses arguments and calls the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use serialgate::config::Config;

/// Serial consoles of routers, switches and other equipment, in reach of AI
/// agents over MCP.
#[derive(Parser)]
#[command(name = "serialgate", version = env!("SERIALGATE_VERSION"), about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway: open the configured ports and serve MCP over stdio,
    /// or over streamable HTTP at http://ADDR/mcp with --http ADDR or
    /// [server] listen (then stdio is not served).
    Serve {
        /// Config file (TOML). Without it: no configured ports, built-in presets.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Serve streamable HTTP at http://ADDR/mcp instead of stdio, e.g.
        /// 127.0.0.1:7301 (port 0: any free port; the address is printed).
        /// Overrides [server] listen.
        #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
        http: Option<String>,
        /// Serve stdio even when the config sets [server] listen.
        #[arg(long)]
        stdio: bool,
    },
    /// Validate a config file and print the ports and presets it defines.
    CheckConfig {
        /// Config file (TOML).
        file: PathBuf,
    },
    /// List serial devices on this machine with USB ids and by-id paths.
    ListPorts,
    /// Print udev rules giving each USB-serial adapter found a stable
    /// /dev/serialgate/NAME link (named after its port in the config) and
    /// keeping ModemManager away from it.
    UdevRules {
        /// Config file (TOML): name the links after its ports.
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Run a simulated device on a pseudo-terminal until interrupted.
    Simulate {
        /// Device profile: cisco-ios, juniper-junos, huawei-vrp, hp-procurve,
        /// ansi-colour, menu, utf8-slow or silent.
        profile: String,
        /// Symlink to create pointing at the pseudo-terminal.
        #[arg(long)]
        link: Option<PathBuf>,
        /// Ask for a login first: USER:PASS.
        #[arg(long, value_name = "USER:PASS")]
        login: Option<String>,
        /// How long a device minute lasts for its timers (commit confirmed,
        /// revert timer, reload in), in milliseconds.
        #[arg(long, value_name = "N", default_value_t = 60_000)]
        minute_ms: u64,
        /// Cisco only: start at the ROMMON prompt.
        #[arg(long)]
        rommon: bool,
        /// Cisco only: lines of `show tech-support`, 80 bytes each
        /// (262144 prints 20 MiB), 1 to 999999.
        #[arg(
            long,
            value_name = "N",
            default_value_t = serialgate_sim::cisco::TECH_SUPPORT_LINES as u64,
            value_parser = clap::value_parser!(u64).range(1..1_000_000)
        )]
        tech_support_lines: u64,
        /// After a reload (Cisco) or reset (U-Boot), how long the boot can
        /// be stopped in the boot loader, in milliseconds (Cisco: by the
        /// alternate break CR ~ Ctrl-B; U-Boot: by any key).
        #[arg(long, value_name = "N", default_value_t = 0)]
        boot_window_ms: u64,
        /// Blocks of a boot loader's transfer to damage on arrival,
        /// counted from 0 with repeats: e.g. 3,100.
        #[arg(long, value_name = "N,N")]
        corrupt_blocks: Option<String>,
        /// Blocks of a boot loader's transfer to lose on arrival.
        #[arg(long, value_name = "N,N")]
        drop_blocks: Option<String>,
        /// Take a transfer no faster than the line speed it runs at.
        #[arg(long)]
        pace: bool,
    },
    /// Start a simulated switch and the gateway, and drive a short agent
    /// session through the real MCP path.
    Demo,
    /// Attach to a port's console as a person: watch its output, type into
    /// it (Ctrl-] then a key for the client's commands, Ctrl-] ? lists
    /// them); or list the ports with --list.
    Console(serialgate::console::client::Options),
    /// Write the man pages, serialgate(1) and one per subcommand, into DIR:
    /// the package build's, so they say what --help says.
    #[command(hide = true)]
    GenerateMan {
        /// Directory to write serialgate.1, serialgate-serve.1 … into.
        dir: PathBuf,
    },
    /// Print the completion script for SHELL on stdout.
    #[command(hide = true)]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// How long exiting waits for the runtime's leftover tasks.
const RUNTIME_SHUTDOWN: std::time::Duration = std::time::Duration::from_millis(200);

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Generated from the command definition, before any runtime or logging.
    let generated = match &cli.command {
        Command::GenerateMan { dir } => Some(generate_man(dir)),
        Command::Completions { shell } => Some(completions(*shell)),
        _ => None,
    };
    if let Some(done) = generated {
        return match done {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("serialgate: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    serialgate::daemon::allocator::return_large_frees();
    serialgate::daemon::logging::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("serialgate: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let done = match cli.command {
            Command::Serve {
                config,
                http,
                stdio,
            } => {
                let loaded = match &config {
                    Some(path) => Config::load(path).map_err(|e| anyhow::anyhow!("{e}"))?,
                    None => Config::default_with_builtins(),
                };
                let transport = serialgate::daemon::Transport::choose(&loaded, http, stdio);
                serialgate::entry::serve(loaded, config, transport).await
            }
            Command::CheckConfig { file } => check_config(&file),
            Command::ListPorts => {
                list_ports();
                Ok(())
            }
            Command::UdevRules { config } => udev_rules(config.as_deref()),
            Command::Simulate {
                profile,
                link,
                login,
                minute_ms,
                rommon,
                tech_support_lines,
                boot_window_ms,
                corrupt_blocks,
                drop_blocks,
                pace,
            } => {
                let blocks = |flag: &str, text: Option<String>| match text {
                    None => Ok(Vec::new()),
                    Some(text) => serialgate_sim::BlockFaults::parse_list(&text).ok_or_else(|| {
                        anyhow::anyhow!("--{flag} wants block numbers such as 3,100, got `{text}`")
                    }),
                };
                let faults = serialgate_sim::BlockFaults {
                    corrupt: blocks("corrupt-blocks", corrupt_blocks)?,
                    drop: blocks("drop-blocks", drop_blocks)?,
                };
                let login = match login {
                    Some(text) => {
                        Some(serialgate_sim::Credentials::parse(&text).ok_or_else(|| {
                            anyhow::anyhow!("--login wants USER:PASS, got `{text}`")
                        })?)
                    }
                    None => None,
                };
                let options = serialgate_sim::SimOptions {
                    login,
                    minute: std::time::Duration::from_millis(minute_ms),
                    rommon,
                    // At most 999999 (the parser's range): it fits.
                    tech_support_lines: tech_support_lines as usize,
                    boot_window: std::time::Duration::from_millis(boot_window_ms),
                    faults,
                    pace,
                    ..serialgate_sim::SimOptions::default()
                };
                serialgate::entry::simulate(profile, link, options).await
            }
            Command::Demo => serialgate::entry::demo().await,
            // The one command with an exit status of its own (detached,
            // ended by the gateway, or by a signal).
            Command::Console(options) => return serialgate::entry::console(options).await,
            // Answered above, before the runtime started.
            Command::GenerateMan { .. } | Command::Completions { .. } => Ok(()),
        };
        done.map(|()| ExitCode::SUCCESS)
    });
    // Everything that must finish (ports closed, responses sent) was
    // awaited above. What may be left is a blocking read of stdin that only
    // the client can end (stdio serving stopped by SIGTERM): do not wait
    // for it beyond a moment.
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("serialgate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Writes serialgate.1 and a page per visible subcommand into `dir`
/// (created if missing).
fn generate_man(dir: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("cannot write the man pages into {}", dir.display()))
}

/// Prints the completion script for `shell`. Written from a buffer:
/// clap_complete panics on a failed write, such as a closed pipe.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    use std::io::Write;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut completed_command(), "serialgate", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("cannot write the completion script: {e}"))
}

/// The command definition as the completions offer it: the visible
/// subcommands only (clap_complete would offer the hidden ones too). The
/// top level has no arguments of its own beyond --help and --version.
fn completed_command() -> clap::Command {
    let full = Cli::command();
    let visible: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new("serialgate")
        .about(full.get_about().cloned().unwrap_or_default())
        .version(env!("SERIALGATE_VERSION"))
        .subcommand_required(true)
        .subcommands(visible)
}

fn check_config(file: &std::path::Path) -> anyhow::Result<()> {
    let config = Config::load(file).map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("{}: ok", file.display());
    print!("{}", config.summary());
    if let (Some(_), Some(dir)) = (&config.server.ssh_listen, &config.server.state_dir) {
        use serialgate::daemon::ssh::host_key;
        let path = host_key::path_in(dir);
        match host_key::read(&path).map_err(anyhow::Error::msg)? {
            Some(key) => println!(
                "ssh host key: {} ({})",
                host_key::fingerprint(&key),
                path.display()
            ),
            None => println!(
                "ssh host key: none yet; serve makes one in {}",
                path.display()
            ),
        }
    }
    for note in config
        .absent_device_notes()
        .into_iter()
        .chain(config.short_secret_notes())
    {
        println!("{note}");
    }
    Ok(())
}

fn udev_rules(config: Option<&std::path::Path>) -> anyhow::Result<()> {
    let config = match config {
        Some(path) => Some(Config::load(path).map_err(|e| anyhow::anyhow!("{e}"))?),
        None => None,
    };
    print!(
        "{}",
        serialgate::udev::rules(&serialgate::devices::list(), config.as_ref())
    );
    Ok(())
}

fn list_ports() {
    print!(
        "{}",
        serialgate::devices::listing(&serialgate::devices::list())
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visible_subcommands(cmd: &clap::Command) -> Vec<String> {
        cmd.get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| sub.get_name().to_owned())
            .collect()
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
        completed_command().debug_assert();
    }

    #[test]
    fn completions_offer_the_visible_subcommands_only() {
        let full = Cli::command();
        let completed = completed_command();
        assert_eq!(visible_subcommands(&completed), visible_subcommands(&full));
        assert!(completed.get_subcommands().all(|sub| !sub.is_hide_set()));
        assert!(
            full.get_subcommands()
                .any(|sub| sub.get_name() == "generate-man")
        );
        assert_eq!(completed.get_version(), full.get_version());
    }

    #[test]
    fn one_man_page_per_visible_subcommand() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("man1");
        generate_man(&out).unwrap();
        let mut got: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        got.sort();
        let mut want: Vec<String> = visible_subcommands(&Cli::command())
            .into_iter()
            .filter(|name| name != "help")
            .map(|name| format!("serialgate-{name}.1"))
            .chain(["serialgate.1".to_owned()])
            .collect();
        want.sort();
        assert_eq!(got, want);
    }
}
