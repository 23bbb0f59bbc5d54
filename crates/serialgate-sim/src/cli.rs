//! What the simulated command lines share, so that a vendor's simulator
//! holds only its prompts, modes and commands: keys from received bytes,
//! the line editor, output held back by a pager, command words and their
//! abbreviations, output text and dates. Nothing here knows a vendor.

mod clock;
mod editor;
mod keys;
mod pager;
mod text;
mod words;

pub(super) use clock::{civil_from_days, utc_text};
pub(super) use editor::{Edited, LineEditor};
pub(super) use keys::{CTRL_C, CTRL_L, CTRL_Z, Key, Keys, TAB};
pub(super) use pager::{LastPage, Paged, Pager, PagerStyle, Quit, page_lines};
pub(super) use text::{crlf_lines, spaces};
pub(super) use words::{Miss, Word, is_abbreviation, lookup, resolve, split_words};
