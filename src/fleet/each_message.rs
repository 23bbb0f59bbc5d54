//! The loop every subscription of the fleet runs: each message in turn,
//! in a task of its own, until the gateway stops or the subscription
//! ends.

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

/// Runs `each` on every message of `subscriber`, in order, in a task of
/// its own, until `stop` or the subscription ends.
pub fn each_message<F, Fut>(
    mut subscriber: async_nats::Subscriber,
    stop: CancellationToken,
    mut each: F,
) where
    F: FnMut(async_nats::Message) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    crate::task::spawn(async move {
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => break,
                m = subscriber.next() => match m {
                    Some(m) => m,
                    None => break,
                },
            };
            each(message).await;
        }
    });
}
