//! Aho-Corasick automata shared between calls.
//!
//! Every `send_command` needs the same two automata for a port: its
//! auto-reply triggers (`--More--` → space) and its pager literals for the
//! cleanup. Building them is most of a call's own CPU once the I/O is
//! cheap (the round-trip profile in BENCHMARKS.md), yet the lists hardly
//! ever change: they come from a preset, a port's config, or an agent
//! repeating its `auto_reply` argument. So automata are kept here, keyed by
//! their patterns, and a call clones one (an `Arc` inside the automaton)
//! instead of building it.
//!
//! The cache is bounded: at [`CAPACITY`] distinct lists it is emptied and
//! starts over, so agents sending ever new trigger lists cost a rebuild,
//! never unbounded memory.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use aho_corasick::{AhoCorasick, BuildError, MatchKind};

/// Most distinct pattern lists kept.
pub const CAPACITY: usize = 64;

/// Which match semantics an automaton was built with (part of the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Semantics {
    LeftmostFirst,
    LeftmostLongest,
}

type Key = (Semantics, Vec<Vec<u8>>);

static CACHE: LazyLock<Mutex<HashMap<Key, AhoCorasick>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The automaton for `patterns` with leftmost-first semantics (the first
/// listed pattern wins among those starting at the same place), built once.
pub fn leftmost_first<P: AsRef<[u8]>>(patterns: &[P]) -> Result<AhoCorasick, BuildError> {
    cached(Semantics::LeftmostFirst, patterns)
}

/// The automaton for `patterns` with leftmost-longest semantics, built
/// once.
pub fn leftmost_longest<P: AsRef<[u8]>>(patterns: &[P]) -> Result<AhoCorasick, BuildError> {
    cached(Semantics::LeftmostLongest, patterns)
}

fn cached<P: AsRef<[u8]>>(semantics: Semantics, patterns: &[P]) -> Result<AhoCorasick, BuildError> {
    let key: Key = (
        semantics,
        patterns.iter().map(|p| p.as_ref().to_vec()).collect(),
    );
    if let Some(found) = lock().get(&key) {
        return Ok(found.clone());
    }
    // Built outside the lock: a large list does not hold up other calls.
    let kind = match semantics {
        Semantics::LeftmostFirst => MatchKind::LeftmostFirst,
        Semantics::LeftmostLongest => MatchKind::LeftmostLongest,
    };
    let built = AhoCorasick::builder().match_kind(kind).build(&key.1)?;
    let mut cache = lock();
    if cache.len() >= CAPACITY {
        cache.clear();
    }
    cache.insert(key, built.clone());
    Ok(built)
}

/// The cache, also after a panic elsewhere while it was held (its contents
/// are whole automata or nothing, never half-written).
fn lock() -> std::sync::MutexGuard<'static, HashMap<Key, AhoCorasick>> {
    crate::sync::lock(&CACHE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_list_gives_an_automaton_that_finds_the_same() {
        let a = leftmost_first(&["--More--", "[confirm]"]).unwrap();
        let b = leftmost_first(&["--More--", "[confirm]"]).unwrap();
        let hay = b"x --More-- y [confirm]";
        let spans = |ac: &AhoCorasick| {
            ac.find_iter(hay)
                .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
                .collect::<Vec<_>>()
        };
        assert_eq!(spans(&a), vec![(0, 2, 10), (1, 13, 22)]);
        assert_eq!(spans(&a), spans(&b));
    }

    #[test]
    fn semantics_are_part_of_the_key() {
        let first = leftmost_first(&["ab", "abcd"]).unwrap();
        let longest = leftmost_longest(&["ab", "abcd"]).unwrap();
        assert_eq!(first.find("abcd").map(|m| m.end()), Some(2));
        assert_eq!(longest.find("abcd").map(|m| m.end()), Some(4));
    }

    #[test]
    fn many_distinct_lists_stay_bounded() {
        for i in 0..(CAPACITY * 3) {
            let pattern = format!("trigger-{i}");
            let ac = leftmost_first(&[pattern.as_str()]).unwrap();
            assert!(ac.is_match(&pattern));
            assert!(lock().len() <= CAPACITY);
        }
    }
}
