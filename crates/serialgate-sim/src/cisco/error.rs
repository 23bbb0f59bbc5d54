//! Why the switch refused a command line, and how IOS prints it: the
//! `^` marker under the byte it stopped at, an incomplete command, or the
//! ambiguous words quoted.

/// Why a command line was refused; rendered the way IOS prints it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Error {
    /// `% Invalid input detected`, with the marker under this byte of the line.
    Invalid(usize),
    /// `% Incomplete command.`
    Incomplete,
    /// `% Ambiguous command:`, quoting the line up to this byte.
    Ambiguous(usize),
}

/// How IOS reports `error` for `line`, whose first word starts at `start`,
/// typed after a prompt of `prompt_len` characters.
pub(super) fn error_text(error: &Error, prompt_len: usize, line: &[u8], start: usize) -> String {
    match *error {
        Error::Invalid(at) => format!(
            "{:width$}^\r\n% Invalid input detected at '^' marker.\r\n\r\n",
            "",
            width = prompt_len + at
        ),
        Error::Incomplete => "% Incomplete command.\r\n\r\n".to_owned(),
        Error::Ambiguous(end) => {
            let typed = String::from_utf8_lossy(&line[start..end]);
            format!("% Ambiguous command:  \"{typed}\"\r\n")
        }
    }
}
