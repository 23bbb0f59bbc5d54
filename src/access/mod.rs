//! Who may do what: the one room every door asks.
//!
//! Every way in — MCP over stdio and HTTP, the console socket, the console
//! WebSocket, the web view, `/metrics` — turns whoever calls into a
//! [`Caller`] ([`caller`]: the local operator, anyone on a loopback
//! server without auth, or a `[[tokens]]` entry) and asks [`rules`] what
//! that caller may do: which ports it reaches, whether it may take a
//! port's write hold, which tool it may call. No door keeps rules of its
//! own, so a person at the console and an agent over MCP are held to the
//! same ones. An open console or ports feed keeps its caller current
//! ([`standing`]): a reload or a sign-out reaches it at once. The
//! command policy of the guardrails (which commands a caller may send)
//! lives here beside them: [`policy`] judges a line, [`guard`] decides
//! which policy a caller is under on a port and refuses what it may not
//! send, asked by every door the same way.

pub(crate) mod caller;
pub(crate) mod guard;
pub(crate) mod policy;
#[cfg(test)]
mod policy_tests;
pub(crate) mod rules;
pub(crate) mod shares;
pub(crate) mod standing;

pub use caller::Caller;
