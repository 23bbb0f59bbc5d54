//! Compiled templates kept for the next parse, at most [`MAX_COMPILED`]
//! of them: past that the least recently used is dropped, and compiled
//! again from its text when a command needs it. The shipped set has over
//! a thousand templates and a user's directory up to two thousand; a
//! daemon that parses many commands over months keeps only the ones in use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use textfsm_core::Template;

/// Most compiled templates one cache keeps.
pub const MAX_COMPILED: usize = 64;

/// A bounded cache of compiled templates by file name, least recently
/// used dropped first.
#[derive(Debug)]
pub struct Compiled {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Name to its template and the tick it was last used at.
    by_name: HashMap<String, (Arc<Template>, u64)>,
    /// Counts uses: the smallest tick is the least recently used.
    tick: u64,
}

impl Default for Compiled {
    fn default() -> Self {
        Compiled::with_capacity(MAX_COMPILED)
    }
}

impl Compiled {
    /// A cache keeping at most `capacity` templates (at least one).
    pub fn with_capacity(capacity: usize) -> Compiled {
        Compiled {
            capacity: capacity.max(1),
            inner: Mutex::new(Entries::default()),
        }
    }

    /// The template `name`, from the cache or compiled from `text` (and
    /// kept). Compiled outside the lock: two first uses at once both
    /// compile, and nobody waits behind a compilation.
    pub fn get_or_compile(&self, name: &str, text: &str) -> Result<Arc<Template>, String> {
        if let Some(t) = self.get(name) {
            return Ok(t);
        }
        let t = Arc::new(Template::parse_str(text).map_err(|e| format!("{name}: {e}"))?);
        self.insert(name, t.clone());
        Ok(t)
    }

    /// The cached template `name`, now the most recently used.
    pub fn get(&self, name: &str) -> Option<Arc<Template>> {
        let mut e = crate::sync::lock(&self.inner);
        e.tick += 1;
        let tick = e.tick;
        e.by_name.get_mut(name).map(|(t, used)| {
            *used = tick;
            t.clone()
        })
    }

    /// Keeps `template` as `name`, dropping the least recently used one
    /// when the cache is full.
    pub fn insert(&self, name: &str, template: Arc<Template>) {
        let mut e = crate::sync::lock(&self.inner);
        e.tick += 1;
        let tick = e.tick;
        if !e.by_name.contains_key(name) && e.by_name.len() >= self.capacity {
            let oldest = e
                .by_name
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(n, _)| n.clone());
            if let Some(n) = oldest {
                e.by_name.remove(&n);
            }
        }
        e.by_name.insert(name.to_owned(), (template, tick));
    }

    /// How many templates are kept.
    pub fn len(&self) -> usize {
        crate::sync::lock(&self.inner).by_name.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `name` is kept (without counting as a use).
    pub fn contains(&self, name: &str) -> bool {
        crate::sync::lock(&self.inner).by_name.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "Value A (\\S+)\n\nStart\n  ^${A} -> Record\n";

    #[test]
    fn past_its_capacity_the_least_recently_used_is_dropped() {
        let cache = Compiled::with_capacity(3);
        for name in ["a", "b", "c"] {
            cache.get_or_compile(name, T).unwrap();
        }
        // "a" used again: "b" is now the least recently used.
        let a = cache.get("a").unwrap();
        cache.get_or_compile("d", T).unwrap();
        assert_eq!(cache.len(), 3);
        assert!(!cache.contains("b"));
        assert!(cache.contains("a") && cache.contains("c") && cache.contains("d"));
        // A kept template is the same one, not compiled again.
        assert!(Arc::ptr_eq(&a, &cache.get_or_compile("a", T).unwrap()));
        // A dropped one compiles again from its text, and pushes out "c".
        cache.get_or_compile("b", T).unwrap();
        assert!(cache.contains("b") && !cache.contains("c"));
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn a_template_that_does_not_compile_is_not_kept() {
        let cache = Compiled::with_capacity(2);
        let e = cache.get_or_compile("bad", "Value A (\n").unwrap_err();
        assert!(e.starts_with("bad: "), "{e}");
        assert!(cache.is_empty());
    }
}
