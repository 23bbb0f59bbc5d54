//! Command words: a line split into words that remember where they start
//! (error markers point there), and keywords found from unique
//! abbreviations, as every vendor's CLI takes them.

/// One word of a command line and the byte where it starts.
#[derive(Clone, Copy, Debug)]
pub struct Word<'a> {
    /// Where the word starts in the line.
    pub at: usize,
    /// The word.
    pub text: &'a [u8],
}

impl Word<'_> {
    /// The word as text (lossy), for names the line sets.
    pub fn str(&self) -> String {
        String::from_utf8_lossy(self.text).into_owned()
    }

    /// Where the word ends in the line, for markers past it.
    pub fn end(&self) -> usize {
        self.at + self.text.len()
    }
}

/// The words of a command line, split at spaces and tabs.
pub fn split_words(line: &[u8]) -> Vec<Word<'_>> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, &byte) in line.iter().chain(b" ").enumerate() {
        match (byte == b' ' || byte == b'\t', start) {
            (true, Some(at)) => {
                words.push(Word {
                    at,
                    text: &line[at..i],
                });
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    words
}

/// Why a word names no keyword; each vendor words the error its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// No keyword starts with it.
    Unknown,
    /// Several do.
    Ambiguous,
}

/// The keyword of `names` that `word` names or uniquely abbreviates
/// (case-insensitive).
pub fn resolve<'n>(word: &[u8], names: &[&'n str]) -> Result<&'n str, Miss> {
    find(word, names, |name| *name).copied()
}

/// The value of the entry of `table` whose name `word` names or uniquely
/// abbreviates (case-insensitive), for command tables that carry what to
/// run.
pub fn lookup<'t, T>(word: &[u8], table: &'t [(&str, T)]) -> Result<&'t T, Miss> {
    find(word, table, |entry| entry.0).map(|(_, value)| value)
}

/// The entry whose `name` is `word`, or else the only one it abbreviates.
fn find<'e, E>(word: &[u8], entries: &'e [E], name: impl Fn(&E) -> &str) -> Result<&'e E, Miss> {
    if let Some(entry) = entries
        .iter()
        .find(|entry| word.eq_ignore_ascii_case(name(entry).as_bytes()))
    {
        return Ok(entry);
    }
    let mut found = entries
        .iter()
        .filter(|entry| is_abbreviation(word, name(entry)));
    match (found.next(), found.next()) {
        (Some(entry), None) => Ok(entry),
        (Some(_), Some(_)) => Err(Miss::Ambiguous),
        (None, _) => Err(Miss::Unknown),
    }
}

/// Whether `word` is a (case-insensitive) beginning of `name`.
pub fn is_abbreviation(word: &[u8], name: &str) -> bool {
    !word.is_empty()
        && word.len() <= name.len()
        && word.eq_ignore_ascii_case(&name.as_bytes()[..word.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_abbreviations() {
        let words = split_words(b" sh\tsys  up");
        let texts: Vec<(usize, &[u8])> = words.iter().map(|w| (w.at, w.text)).collect();
        assert_eq!(texts, [(1, &b"sh"[..]), (4, &b"sys"[..]), (9, &b"up"[..])]);
        assert_eq!(words[1].end(), 7);
        assert_eq!(resolve(b"sh", &["set", "show"]), Ok("show"));
        assert_eq!(resolve(b"s", &["set", "show"]), Err(Miss::Ambiguous));
        assert_eq!(resolve(b"x", &["set", "show"]), Err(Miss::Unknown));
        assert_eq!(resolve(b"SET", &["set", "setup"]), Ok("set"));
    }

    #[test]
    fn lookup_finds_what_a_table_entry_carries() {
        let table = [("length", 1), ("width", 2), ("write", 3)];
        assert_eq!(lookup(b"len", &table), Ok(&1));
        assert_eq!(lookup(b"WI", &table), Ok(&2));
        assert_eq!(lookup(b"w", &table), Err(Miss::Ambiguous));
        assert_eq!(lookup(b"x", &table), Err(Miss::Unknown));
    }
}
