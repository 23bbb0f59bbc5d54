//! The load test, short: streaming devices and MCP
//! sessions over HTTP at once; every streamed line must reach the
//! OutputLog exactly once and in order, and every `send_command` must get
//! its own complete output. Speed is measured and printed, not asserted;
//! the long run is `cargo bench --bench load`.

use serialgate_testkit::load;

use std::path::Path;
use std::time::Duration;

use load::{LoadParams, run_load};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_lost_under_load() {
    let params = LoadParams {
        ports: 16,
        sessions: 4,
        duration: Duration::from_secs(3),
        lines_per_sec: 200,
    };
    let report = run_load(Path::new(env!("CARGO_BIN_EXE_serialgate")), &params)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    report.print();
    println!("{}", report.json());
    assert!(report.lines > 0 && report.bytes > 0, "nothing streamed");
    assert!(!report.command_us.is_empty(), "no command ran");
    assert!(!report.wait_us.is_empty(), "no read_until_prompt ran");
    assert!(!report.read_us.is_empty(), "no read_output ran");
}

/// The check above would see a line lost, repeated, out of order, from
/// another port, torn or damaged.
#[test]
fn the_stream_check_catches_every_kind_of_damage() {
    let lines =
        |seqs: &[u64]| -> String { seqs.iter().map(|&s| load::stream_line(3, s)).collect() };
    assert!(load::check_stream(3, lines(&[0, 1, 2, 3]).as_bytes(), 4).is_ok());
    for (what, bytes, count) in [
        ("gap", lines(&[0, 1, 3]), 4),
        ("duplicate", lines(&[0, 1, 1, 2]), 3),
        ("reordered", lines(&[0, 2, 1, 3]), 4),
        ("missing tail", lines(&[0, 1, 2]), 4),
        ("extra", lines(&[0, 1, 2, 3, 4]), 4),
        ("torn", lines(&[0, 1, 2, 3]).trim_end().to_owned(), 4),
        (
            "stranger",
            format!("{}{}", lines(&[0]), load::stream_line(4, 1)),
            2,
        ),
        ("damaged", lines(&[0, 1]).replacen("quick", "quack", 1), 2),
    ] {
        assert!(
            load::check_stream(3, bytes.as_bytes(), count).is_err(),
            "{what} went unnoticed"
        );
    }
}
