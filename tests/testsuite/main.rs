//! serialgate's end-to-end tests, in one test binary: the real
//! `serialgate` binary as a child process, simulated devices on real
//! pseudo-terminals, and the test kit's clients (MCP over stdio and
//! streamable HTTP, the console socket, WebSocket, a headless browser).
//!
//! One module per concern, as cargo's own `tests/testsuite/` is laid out:
//! one binary links the test kit once, where one binary per file would
//! link it once per file. Every test of every module shares this process
//! and runs in parallel threads, so a test keeps to its own temporary
//! directory, its own daemon and its own ports (`127.0.0.1:0`), and
//! nothing here sets process-wide state (environment variables, the
//! working directory) that another test could see. A test awaits events
//! (frames, notifications, the daemon's stderr, a child's exit); state
//! that nothing announces it polls with `serialgate_testkit::wait`.
//!
//! Run all of it with `cargo test --test testsuite`, one module with
//! `cargo test --test testsuite console::` (a name filter: every test
//! whose path contains `console::`; `web::` also takes `hostile_web::`,
//! which `-- --skip hostile_web::` leaves out), one test by its path, e.g.
//! `cargo test --test testsuite reads::output_is_captured_before_anyone_connects`.
//! `tests/layout.rs`, which checks the repository's layout, is a test
//! target of its own.

mod alerts;
mod approvals;
mod approvals_mcp_user;
mod approvals_web;
mod bigout;
mod commands;
mod configure;
mod console;
mod console_client;
mod console_policy;
mod console_real;
mod errors;
mod expect;
mod first_config;
mod fleet;
mod fleet_alerts;
mod fleet_console;
mod fleet_flood;
mod fleet_own_alerts;
mod fleet_policy;
mod fleet_reload;
mod fleet_sessions;
mod frr;
mod hostile;
mod hostile_doors;
mod hostile_files;
mod hostile_http;
mod hostile_remotes;
mod hostile_scope;
mod hostile_secrets;
mod hostile_ssh;
mod hostile_throttle;
mod hostile_watches;
mod hostile_web;
mod http;
mod isolation;
mod lifecycle;
mod line_control;
mod linux_console;
mod load;
mod lrzsz;
mod metrics;
mod notify;
mod pagers;
mod parsed_output;
mod policy;
mod policy_corpus;
mod power;
mod power_bmc;
mod power_ipmi;
mod power_redfish;
mod power_snmp;
mod progress;
mod prompts;
mod python_sdk;
mod reads;
mod real_programs;
mod reload;
mod remote;
mod restart;
mod ser2net;
mod service;
mod ssh;
mod terminal;
mod textfsm_fixtures;
mod tls;
mod transfer;
mod vendors;
mod web;
mod webhook;
