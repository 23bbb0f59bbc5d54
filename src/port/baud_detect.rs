//! Baud-rate detection: for each candidate rate, set it, probe, listen,
//! and score how readable the output is; the port is left at the rate
//! that read best. The scoring ([`readability`], [`choose_best`]) is made of
//! plain functions, tested against a model of a UART reading at the wrong
//! rate, without hardware. Rates are set through the port's line control
//! (`control.rs`); while a detection runs, other settings changes are
//! refused as `busy`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;

use super::connection::ControlSlot;
use super::control::join_error;
use super::handle::Port;
use crate::error::GateError;
use crate::log::OutputLog;
use crate::settings::LineSettings;

/// Longest listening time per candidate rate of `detect_baud`.
pub const MAX_LISTEN: Duration = Duration::from_secs(5);
/// Most candidate rates one `detect_baud` tries.
pub const MAX_CANDIDATES: usize = 16;
/// Rates `detect_baud` tries when not told: the usual console rates.
pub const DEFAULT_CANDIDATES: [u32; 5] = [9600, 19200, 38400, 57600, 115200];
/// Lowest readability score that counts as "this rate reads": below it,
/// what arrived is mostly noise.
pub const MIN_SCORE: f64 = 0.5;
/// Once output arrived at a candidate rate, this much quiet ends its
/// listening early.
const DETECT_QUIET: Duration = Duration::from_millis(200);
/// Bytes of each candidate's output shown in the detection's `sample`.
const SAMPLE_BYTES: usize = 64;

/// How readable console output is, from 0 (nothing, or noise) to 1 (text).
///
/// At the right rate a console prints text: printable ASCII, line breaks,
/// now and then UTF-8 or a terminal control (tab, backspace, bell,
/// escape). At a wrong rate the receiver samples the wrong bits: high-bit
/// bytes, NULs from framing errors, stray C0 controls, and (when the rates
/// differ by two) a fair share of printable bytes and short valid UTF-8
/// sequences. So printable ASCII and line breaks count fully, other UTF-8
/// characters by half, tab/backspace/bell/escape by a quarter, anything
/// else not at all; the score is that share of the bytes, scaled down
/// when there is too little to judge (under 8 readable characters, a line
/// break counting for 4), so one stray printable byte is not a console.
/// Modelled garbage of a wrong rate stays under 0.45 (see the tests).
pub fn readability(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let (mut readable, mut breaks) = (0.0f64, 0usize);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            readable += match c {
                '\r' | '\n' => {
                    breaks += 1;
                    1.0
                }
                ' '..='~' => 1.0,
                '\t' | '\x07' | '\x08' | '\x1b' => 0.25,
                c if c.is_control() => 0.0,
                c => 0.5 * c.len_utf8() as f64,
            };
        }
    }
    let share = readable / bytes.len() as f64;
    let evidence = ((readable + 4.0 * breaks.min(1) as f64) / 8.0).min(1.0);
    share * evidence
}

/// Shows bytes as text an agent can judge: valid printable characters as
/// they are, `\r` `\n` `\t` `\\` escaped, anything else as `\xNN`.
pub fn escape_sample(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\r' => out.push_str("\\r"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// How one candidate rate of `detect_baud` read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BaudScore {
    /// The rate tried.
    pub baud: u32,
    /// Readability of what arrived, 0 (nothing or noise) to 1 (clean text).
    pub score: f64,
    /// Bytes that arrived while listening.
    pub bytes: u64,
    /// The first bytes that arrived, non-printables as \xNN.
    pub sample: String,
}

/// The outcome of [`Port::detect_baud`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BaudDetection {
    /// Every candidate, best first (ties keep the order tried).
    pub ranking: Vec<BaudScore>,
    /// The rate that read best, if any read well enough (score ≥ 0.5).
    pub best: Option<u32>,
    /// The line settings the port is left at: the best rate, else the original.
    pub settings: LineSettings,
    /// The rate changed from what it was before the detection.
    pub changed: bool,
}

/// Picks the best-reading candidate: the highest score of at least
/// [`MIN_SCORE`]; among equal scores the current rate, else the first tried.
pub fn choose_best(ranking: &[BaudScore], current: u32) -> Option<u32> {
    let top = ranking.iter().map(|s| s.score).fold(f64::NAN, f64::max);
    if top.is_nan() || top < MIN_SCORE {
        return None;
    }
    let tied: Vec<u32> = ranking
        .iter()
        .filter(|s| (s.score - top).abs() < 1e-9)
        .map(|s| s.baud)
        .collect();
    tied.iter()
        .copied()
        .find(|&b| b == current)
        .or(tied.first().copied())
}

/// Waits for what arrives from `start` for at most `listen`, ending early
/// once output has started and then stayed quiet for [`DETECT_QUIET`].
/// Wakes on appends only; returns the end offset.
async fn listen_from(log: &OutputLog, start: u64, listen: Duration) -> u64 {
    let mut head_rx = log.subscribe();
    let deadline = Instant::now() + listen;
    loop {
        let head = *head_rx.borrow_and_update();
        let wake_at = if head > start {
            (Instant::now() + DETECT_QUIET).min(deadline)
        } else {
            deadline
        };
        tokio::select! {
            changed = head_rx.changed() => if changed.is_err() { break },
            _ = tokio::time::sleep_until(wake_at) => break,
        }
    }
    log.head()
}

/// Resets the detection flag when a detection ends, however it ends.
struct Detecting<'a>(&'a ControlSlot);

impl Drop for Detecting<'_> {
    fn drop(&mut self) {
        self.0.stop_detecting();
    }
}

impl Port {
    /// Finds the baud rate the device talks at: for each candidate, sets
    /// the rate, sends `probe`, listens up to `listen` (at most
    /// [`MAX_LISTEN`]) and scores what arrived with [`readability`]. Leaves
    /// the port at the best rate, or the original one when none reads
    /// well. Runs to the end even if the caller goes away.
    pub async fn detect_baud(
        &self,
        candidates: Vec<u32>,
        probe: Vec<u8>,
        listen: Duration,
    ) -> Result<BaudDetection, GateError> {
        let listen = listen.min(MAX_LISTEN);
        if self.lacks_line_control() {
            return Err(self.remote_refusal("detect_baud"));
        }
        if candidates.is_empty() || candidates.len() > MAX_CANDIDATES {
            return Err(GateError::invalid(format!(
                "give 1 to {MAX_CANDIDATES} candidate rates, got {}",
                candidates.len()
            )));
        }
        let original = self.line_settings();
        for &baud in &candidates {
            LineSettings { baud, ..original }
                .validate()
                .map_err(GateError::invalid)?;
        }
        if !self.control().start_detecting() {
            return Err(self.detecting_error());
        }
        let port = self.clone();
        let task = crate::task::spawn(async move {
            let _flag = Detecting(port.control());
            let mut ranking = Vec::with_capacity(candidates.len());
            let tried = port
                .try_candidates(&candidates, &probe, listen, original, &mut ranking)
                .await;
            let best = choose_best(&ranking, original.baud);
            let settings = LineSettings {
                baud: best.unwrap_or(original.baud),
                ..original
            };
            if let Err(e) = tried {
                // Back to the original rate (best effort: the device may be gone).
                let _ = port.apply_live(&original, original).await;
                return Err(e);
            }
            port.apply_and_store(settings, original).await?;
            ranking.sort_by(|a, b| b.score.total_cmp(&a.score));
            let rates: Vec<String> = candidates.iter().map(u32::to_string).collect();
            port.record(format!(
                "detect_baud tried {}: {}",
                rates.join(", "),
                best.map_or_else(
                    || format!("none read well, kept {}", original.baud),
                    |b| format!("best {b}")
                )
            ));
            Ok(BaudDetection {
                ranking,
                best,
                changed: settings.baud != original.baud,
                settings,
            })
        });
        task.await.map_err(join_error)?
    }

    async fn try_candidates(
        &self,
        candidates: &[u32],
        probe: &[u8],
        listen: Duration,
        original: LineSettings,
        ranking: &mut Vec<BaudScore>,
    ) -> Result<(), GateError> {
        let log = self.log();
        for &baud in candidates {
            self.apply_live(&LineSettings { baud, ..original }, original)
                .await?;
            let start = log.head();
            if !probe.is_empty() {
                self.write(probe).await?;
            }
            let end = listen_from(log, start, listen).await;
            let bytes = log.copy_range(start, end);
            ranking.push(BaudScore {
                baud,
                score: (readability(&bytes) * 1000.0).round() / 1000.0,
                bytes: bytes.len() as u64,
                sample: escape_sample(&bytes[..bytes.len().min(SAMPLE_BYTES)]),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a receiver at `rx_baud` reads from `text` sent at `tx_baud`
    /// (8N1): the line is sampled in the middle of each bit the receiver
    /// expects; a stop bit read as 0 is a framing error, which a raw tty
    /// delivers as NUL.
    fn misread(text: &[u8], tx_baud: u32, rx_baud: u32) -> Vec<u8> {
        let mut levels = Vec::new(); // one entry per tx bit
        levels.extend([true; 4]); // idle
        for &b in text {
            levels.push(false);
            levels.extend((0..8).map(|i| b >> i & 1 == 1));
            levels.push(true);
        }
        levels.extend([true; 20]);
        let total = levels.len() as f64 / tx_baud as f64;
        let level_at = |t: f64| {
            let i = (t * tx_baud as f64) as usize;
            levels.get(i).copied().unwrap_or(true)
        };
        let rx_bit = 1.0 / rx_baud as f64;
        let step = rx_bit / 16.0;
        let (mut out, mut t) = (Vec::new(), 0.0);
        while t < total {
            if level_at(t) {
                t += step;
                continue;
            }
            // Start bit edge at t: sample the data bits in their middles.
            let mut byte = 0u8;
            for i in 0..8 {
                if level_at(t + rx_bit * (1.5 + i as f64)) {
                    byte |= 1 << i;
                }
            }
            let stop = level_at(t + rx_bit * 9.5);
            out.push(if stop { byte } else { 0 });
            // Hunt for the next start edge from the middle of the stop bit
            // (after a framing error, from when the line is idle again).
            t += rx_bit * 9.5;
            while t < total && !level_at(t) {
                t += step;
            }
        }
        out
    }

    const CONSOLE: &[u8] = b"\r\nSW1>\r\nSW1>show version\r\nCisco IOS Software, C2960 Software (C2960-LANBASEK9-M), Version 15.0(2)SE11\r\nROM: Bootstrap program is C2960 boot loader\r\nSW1 uptime is 3 weeks, 2 days\r\nSW1>";

    /// What consoles answer a CR with, or print at boot.
    const CONSOLES: [&[u8]; 5] = [
        CONSOLE,
        b"\r\nUbuntu 22.04.3 LTS pi-console ttyS0\r\n\r\npi-console login: ",
        b"\r\n--- JUNOS 21.4R3-S5.4 Kernel 64-bit  JNPR-12.1-20230608.3f5a5e6_buil\r\nroot@mx1> show interfaces terse \r\nInterface               Admin Link Proto    Local                 Remote\r\nge-0/0/0                up    up\r\nge-0/0/0.0              up    up   inet     10.0.0.1/30     \r\n{master}\r\nroot@mx1> ",
        b"\r\n\r\nSystem Bootstrap, Version 15.0(1r)M16, RELEASE SOFTWARE (fc1)\r\nrommon 1 > ",
        b"\r\n\x1b[2J\x1b[HPress any key to continue\r\n",
    ];

    #[test]
    fn the_uart_model_reads_clean_text_at_the_right_rate() {
        for text in CONSOLES {
            assert_eq!(misread(text, 9600, 9600), text);
            assert_eq!(misread(text, 115200, 115200), text);
        }
    }

    #[test]
    fn clean_console_text_scores_high_and_wrong_rates_score_low() {
        let rates = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400];
        for text in CONSOLES {
            let clean = readability(text);
            assert!(
                clean > 0.9,
                "clean text: {clean} for {}",
                escape_sample(text)
            );
            for tx in rates {
                for rx in rates.iter().copied().filter(|&rx| rx != tx) {
                    let garbage = misread(text, tx, rx);
                    let score = readability(&garbage);
                    assert!(
                        score < 0.45,
                        "device at {tx}, read at {rx}: {score} for {}",
                        escape_sample(&garbage)
                    );
                }
            }
        }
    }

    #[test]
    fn short_noise_is_not_a_console_but_a_short_prompt_is() {
        assert_eq!(readability(b""), 0.0);
        assert!(readability(b"x") < MIN_SCORE);
        assert!(readability(b"\x00\xf8\x80") < 0.01);
        assert!(readability(b"\r\nSW1>") > 0.9);
        assert!(readability(b"\r\nrommon 1 > ") > 0.9);
        assert!(readability("Ünïcödé prompt ✓\r\n".as_bytes()) > MIN_SCORE);
        assert!(readability(b"\x1b[2J\x1b[Hlogin: ") > 0.8);
    }

    #[test]
    fn samples_escape_what_is_not_text() {
        assert_eq!(escape_sample(b"SW1>\r\n"), "SW1>\\r\\n");
        assert_eq!(escape_sample(b"\x00\xf8a\\"), "\\x00\\xf8a\\\\");
        assert_eq!(escape_sample("é".as_bytes()), "é");
    }

    fn score(baud: u32, score: f64) -> BaudScore {
        BaudScore {
            baud,
            score,
            bytes: 1,
            sample: String::new(),
        }
    }

    #[test]
    fn the_best_rate_wins_ties_keep_the_current_one_and_noise_wins_nothing() {
        let ranking = [score(9600, 0.1), score(115200, 0.98), score(57600, 0.2)];
        assert_eq!(choose_best(&ranking, 9600), Some(115200));
        let tie = [score(9600, 1.0), score(19200, 1.0), score(115200, 1.0)];
        assert_eq!(choose_best(&tie, 115200), Some(115200));
        assert_eq!(choose_best(&tie, 38400), Some(9600));
        let noise = [score(9600, 0.2), score(115200, 0.0)];
        assert_eq!(choose_best(&noise, 9600), None);
        assert_eq!(choose_best(&[], 9600), None);
    }
}
