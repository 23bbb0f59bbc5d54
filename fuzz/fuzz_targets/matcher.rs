//! The incremental prompt and trigger scanners against one plain search.
//!
//! Why: waits scan only the new bytes plus a bounded look-behind
//! (`PromptScanner::window_start`), with a line-end prefilter for prompt
//! regexes of the right shape; a wrong window or prefilter shows up as a
//! prompt missed, found too early, or found where it is not.
//!
//! What, for the prompt: the bytes after `cursor` arrive in the chunks the
//! input chose, and after each arrival (and once before any) the scanner
//! scans its window, as `port/wait.rs` does. The oracle is the same
//! pattern, compiled the same way (a `regex::bytes::Regex`, multi-line, or
//! a plain substring search for a literal), run once from `cursor` over
//! everything that has arrived: `$` holds at the end of what has arrived,
//! so the reference is taken at each arrival point, as in the module's own
//! tests. They must agree at every arrival, unless the reference match
//! starts more than `REGEX_LOOK_BEHIND` (4 KiB) before the previous
//! arrival point: the documented bound of a regex prompt (a literal has no
//! such bound). Then the case ends there.
//!
//! For the auto-reply triggers, scanned alongside with the prompt's start
//! as the limit: every hit is an occurrence of its trigger at or after the
//! cursor, hits come in order without overlapping, and every occurrence up
//! to the last limit overlaps a hit (answered once, none missed).
//!
//! Patterns come from a small grammar (pieces of console text, classes,
//! anchors, groups, repetitions) so that nearly every input is a valid
//! regex; output is console pieces plus long runs of one piece, so that
//! the 4 KiB look-behind is crossed.

#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use regex::bytes::{Regex, RegexBuilder};
use serialgate::matcher::{Prompt, PromptScanner, REGEX_LOOK_BEHIND, Span, TriggerScanner};

/// Pieces of console output (and of literal prompts and triggers).
const PIECES: &[&str] = &[
    "SW1",
    "#",
    ">",
    " ",
    "a",
    "b",
    "x",
    "1",
    ".",
    "-",
    "_",
    "(config)",
    "\r\n",
    "\n",
    "\r",
    "\x08",
    "\t",
    "--More--",
    "[confirm]",
    "é",
    "€",
    "😀",
    "user@r1",
    "\u{a0}",
];

/// Raw bytes that are not whole characters.
const RAW: &[&[u8]] = &[b"\xc3", b"\xa9", b"\xe2\x82", b"\xff", b"\x80"];

/// Regex atoms: classes, escapes, anchors.
const ATOMS: &[&str] = &[
    r"[a-z]",
    r"[#>]",
    r"[\w.-]",
    r"\w",
    r"\W",
    r"\d",
    r"\s",
    r"\S",
    r".",
    r"[^\n]",
    r"[^#]",
    r"\b",
    r"\B",
    r"^",
    r"$",
    r"\A",
    r"\z",
    r"\r?\n",
    r"\n",
    r"é",
    r"[é€]",
    r"(?-u:\xff)",
    r"(?-u:\b)",
    r"\p{L}",
];

/// Inline flags a pattern may start with.
const FLAGS: &[&str] = &["", "", "(?-m)", "(?s)", "(?i)", "(?U)"];

fn piece(u: &mut Unstructured) -> Result<&'static str> {
    u.choose(PIECES).copied()
}

/// Some console text: 1 to 4 pieces.
fn text(u: &mut Unstructured) -> Result<String> {
    let mut s = String::new();
    for _ in 0..u.int_in_range(1..=4)? {
        s.push_str(piece(u)?);
    }
    Ok(s)
}

/// A regex of `depth` levels of groups and repetitions at most.
fn regex_source(u: &mut Unstructured, depth: u8) -> Result<String> {
    let mut s = String::new();
    for _ in 0..u.int_in_range(1..=4)? {
        s.push_str(&term(u, depth)?);
    }
    Ok(s)
}

fn term(u: &mut Unstructured, depth: u8) -> Result<String> {
    let choice = if depth == 0 {
        u.int_in_range(0..=1)?
    } else {
        u.int_in_range(0..=4)?
    };
    Ok(match choice {
        0 => regex::escape(&text(u)?),
        1 => u.choose(ATOMS)?.to_string(),
        2 => format!(
            "(?:{}|{})",
            regex_source(u, depth - 1)?,
            regex_source(u, depth - 1)?
        ),
        3 => format!("({})", regex_source(u, depth - 1)?),
        _ => {
            let op = *u.choose(&["+", "*", "?", "{1,3}", "+?", "{2}"])?;
            format!("(?:{}){op}", regex_source(u, depth - 1)?)
        }
    })
}

/// Most bytes of output: enough to cross the 4 KiB look-behind twice,
/// few enough that the oracle's search from the cursor at every arrival
/// stays fast.
const MAX_OUTPUT: usize = 10_000;

/// Most arrivals one by one; the rest of the output then comes at once.
const MAX_ARRIVALS: usize = 24;

/// The output: pieces, raw bytes and long runs of one piece.
fn output(u: &mut Unstructured) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..u.int_in_range(0..=48)? {
        if out.len() >= MAX_OUTPUT {
            break;
        }
        match u.int_in_range(0..=9)? {
            0 => out.extend_from_slice(u.choose(RAW)?),
            1 => {
                let run = piece(u)?.repeat(u.int_in_range(1..=2500)?);
                out.extend_from_slice(run.as_bytes());
            }
            _ => out.extend_from_slice(piece(u)?.as_bytes()),
        }
    }
    Ok(out)
}

/// The oracle's pattern: a regex compiled as `Prompt::regex` compiles it,
/// or a literal.
enum Reference {
    Literal(Vec<u8>),
    Regex(Regex),
}

impl Reference {
    /// The first match starting at or after `cursor` in all of `hay`.
    fn find(&self, hay: &[u8], cursor: usize) -> Option<Span> {
        let (start, end) = match self {
            Reference::Literal(lit) => {
                let i = hay[cursor..]
                    .windows(lit.len())
                    .position(|w| w == &lit[..])?;
                (cursor + i, cursor + i + lit.len())
            }
            Reference::Regex(re) => re.find_at(hay, cursor).map(|m| (m.start(), m.end()))?,
        };
        Some(Span {
            start: start as u64,
            end: end as u64,
        })
    }
}

fn run(u: &mut Unstructured) -> Result<()> {
    let (prompt, reference) = if u.ratio(1, 4)? {
        let lit = text(u)?;
        (Prompt::literal(&lit), Reference::Literal(lit.into_bytes()))
    } else {
        let source = format!("{}{}", u.choose(FLAGS)?, regex_source(u, 2)?);
        let oracle = RegexBuilder::new(&source)
            .multi_line(true)
            .size_limit(1 << 20)
            .dfa_size_limit(4 << 20)
            .build();
        match (Prompt::regex(&source), oracle) {
            (Ok(p), Ok(re)) => (p, Reference::Regex(re)),
            (Err(_), Err(_)) => return Ok(()),
            (p, re) => panic!(
                "{source:?}: Prompt::regex {:?}, the regex {:?}",
                p.is_ok(),
                re.is_ok()
            ),
        }
    };
    let mut pairs = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        pairs.push((text(u)?, " ".to_string()));
    }
    let log = output(u)?;
    let cursor = if u.ratio(1, 2)? {
        0
    } else {
        u.int_in_range(0..=log.len())?
    };
    let chunks: Vec<usize> = (0..u.int_in_range(1..=8)?)
        .map(|_| u.int_in_range(1..=4500))
        .collect::<Result<_>>()?;
    // How much earlier than `window_start` the caller's window starts (it
    // may: the window is "from at most window_start").
    let slack = u.int_in_range(0..=8)? as u64;

    let mut scanner = PromptScanner::new(prompt.clone(), cursor as u64);
    let mut triggers = TriggerScanner::new(&pairs, cursor as u64).unwrap();
    let mut hits = Vec::new();
    let mut limit_max = cursor as u64;
    let (mut head, mut previous) = (cursor, cursor);
    let mut sizes = chunks.iter().cycle();
    for arrival in 0.. {
        let base = scanner.window_start().saturating_sub(slack);
        assert!(base <= head as u64);
        let found = scanner.scan(&log[base as usize..head], base);
        let expected = reference.find(&log[..head], cursor);
        let beyond_bound = matches!(reference, Reference::Regex(_))
            && expected.is_some_and(|s| s.start + REGEX_LOOK_BEHIND < previous as u64);
        if beyond_bound {
            return Ok(());
        }
        assert_eq!(
            found,
            expected,
            "prompt {:?}, arrival {arrival} at {head} (previous {previous})",
            prompt.source()
        );
        let limit = found.map_or(head as u64, |s| s.start);
        limit_max = limit_max.max(limit);
        let tbase = triggers.window_start().saturating_sub(slack);
        hits.extend(triggers.scan(&log[tbase as usize..head], tbase, limit));
        if found.is_some() || head == log.len() {
            break;
        }
        previous = head;
        let size = if arrival < MAX_ARRIVALS {
            *sizes.next().unwrap()
        } else {
            log.len()
        };
        head = (head + size).min(log.len());
    }

    for (i, hit) in hits.iter().enumerate() {
        let (start, end) = (hit.span.start as usize, hit.span.end as usize);
        assert!(
            start >= cursor && hit.span.end <= limit_max,
            "{hit:?} outside the output"
        );
        assert_eq!(
            &log[start..end],
            triggers.trigger(hit).as_bytes(),
            "{hit:?} is not its trigger"
        );
        if let Some(next) = hits.get(i + 1) {
            assert!(
                hit.span.end <= next.span.start,
                "{hit:?} and {next:?} out of order or overlapping"
            );
        }
    }
    for (trigger, _) in &pairs {
        let t = trigger.as_bytes();
        for start in cursor..(limit_max as usize + 1).saturating_sub(t.len()) {
            if log[start..].starts_with(t) {
                let end = (start + t.len()) as u64;
                // Hits are in order: the first one ending after `start`
                // is the only candidate.
                let i = hits.partition_point(|h| h.span.end <= start as u64);
                assert!(
                    hits.get(i).is_some_and(|h| h.span.start < end),
                    "{trigger:?} at {start} unanswered; hits {hits:?}"
                );
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
