//! Tasks spawned as boxed futures. Tokio compiles its task machinery
//! (the cell, the harness that polls, cancels and completes) once for each
//! type of future spawned; the daemon spawns some seventy kinds of
//! `async` block, and those copies were a twentieth of the library's LLVM
//! IR (`cargo llvm-lines`), compiled in every fresh build. Spawned through
//! here, every task is one type of future per output type, for the price
//! of one allocation per spawn (a connection, a port, a watch: never per
//! byte). The layout test keeps every spawn of the daemon coming here.

use std::future::Future;
use std::pin::Pin;

use tokio::task::JoinHandle;

/// A future behind a box, the one type every spawned task of an output
/// type shares.
pub type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Spawns `work` on the current runtime, as `tokio::spawn` does.
pub fn spawn<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> JoinHandle<T> {
    tokio::spawn(boxed(work))
}

/// Runs `work` on the blocking pool, as `tokio::task::spawn_blocking`
/// does, boxed for the same reason.
pub fn spawn_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let work: Box<dyn FnOnce() -> T + Send> = Box::new(work);
    tokio::task::spawn_blocking(work)
}

/// `work` boxed as every spawned task of its output type is: for a
/// `JoinSet`, a `TaskTracker` or a runtime handle.
pub fn boxed<T>(work: impl Future<Output = T> + Send + 'static) -> Boxed<T> {
    Box::pin(work)
}
