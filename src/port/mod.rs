//! One serial line: the open device, its reader task, its serialized
//! writer, its OutputLog and its state.
//!
//! A [`Port`] (`handle.rs`) is a cheap clonable handle over the port's
//! parts, one per concern, each owned by its file: the device and its line
//! control (`connection.rs`), the log and its waiters (`wait.rs`), the
//! hold and the people present (`sharing.rs`), the transfer under way
//! (`transfer.rs`), the watches and alerts (`alerts.rs`), the confirm
//! watch (`confirm_watch.rs`), the lines waiting for a person's approval
//! (`approvals.rs`), the event history (`state.rs`), whether
//! its login prompts may be trusted with stored credentials
//! (`login_trust.rs`), its recent output as a download (`tail.rs`). The
//! files
//! depend on each other without a circle: the parts below the handle, the
//! operations that need the whole port (`reader.rs`, `control.rs`,
//! `baud_detect.rs`, `responder.rs`, `transfer_drive.rs`) above it. This
//! file is only the module map and the names the rest of the daemon uses.

pub mod alerts;
mod appear;
pub mod approvals;
pub mod baud_detect;
mod comport;
mod comport_link;
mod confirm_watch;
mod connection;
pub mod control;
mod device;
mod handle;
pub mod lines;
pub mod login_trust;
pub mod mask;
mod presence;
mod reader;
mod responder;
mod sharing;
mod state;
pub mod tail;
pub mod tail_stream;
mod telnet_link;
pub mod transfer;
mod transfer_drive;
pub mod wait;

pub use confirm_watch::PendingConfirm;
pub use handle::{Port, PortServices, PortSpec};
pub use login_trust::PromptJudge;
pub use presence::Participant;
pub use sharing::Holder;
pub use state::{PortEvent, PortState};
