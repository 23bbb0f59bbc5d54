//! Waiting for a condition nothing announces: the one poll of the tests.
//!
//! Most of what a test waits for arrives as an event it can await (a
//! frame, a notification, a line on the daemon's stderr, a child's exit).
//! Some state reaches a client only when it asks (`status`, `list_ports`,
//! a file the daemon writes, the metrics page): for those, [`eventually`]
//! asks again with a short backoff until the check holds or its deadline
//! passes, and a failure says what was awaited and what was last seen.
//! [`until`] is the same wait that hands the last sight back instead of
//! failing, for a caller that accepts more than one outcome.
//!
//! A check is a closure that returns a future (`|| async move { .. }`, or
//! an `async || { .. }` that only reads what it captures), which gives
//! `Ok(value)` when it holds and `Err(seen)` when it does not yet, `seen`
//! being what it looked at (shown if the wait fails); [`when`] makes one
//! of a value and a condition. [`until_every`] looks at a fixed pace, for
//! a poll that also times what it awaits. A closure returning a future,
//! unlike an async closure's lending call, keeps the wait `Send`, so it
//! runs in a spawned task too.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// The first pause between two looks.
const FIRST_PAUSE: Duration = Duration::from_millis(5);
/// The longest pause between two looks (the backoff stops growing here).
const LONGEST_PAUSE: Duration = Duration::from_millis(100);

/// The pause after `pause`: half as long again, up to [`LONGEST_PAUSE`].
fn next_pause(pause: Duration) -> Duration {
    (pause + pause / 2).min(LONGEST_PAUSE)
}

/// Runs `check` until it returns `Ok`, pausing a little longer after each
/// miss, for at most `within`; the value, or what the check last saw when
/// the deadline passed. The check runs at least once, and once more at
/// the deadline.
pub async fn until<T, S, Fut: Future<Output = Result<T, S>>>(
    within: Duration,
    check: impl FnMut() -> Fut,
) -> Result<T, S> {
    looking(
        within,
        std::iter::successors(Some(FIRST_PAUSE), |p| Some(next_pause(*p))),
        check,
    )
    .await
}

/// [`until`] with the same short `pause` after every miss, for a test
/// whose poll is also its measurement (how soon something ended), which a
/// growing pause would blur.
pub async fn until_every<T, S, Fut: Future<Output = Result<T, S>>>(
    within: Duration,
    pause: Duration,
    check: impl FnMut() -> Fut,
) -> Result<T, S> {
    looking(within, std::iter::repeat(pause), check).await
}

/// Runs `check` until it holds or `within` passes, pausing after each
/// miss for the next of `pauses` (cut short at the deadline).
async fn looking<T, S, Fut: Future<Output = Result<T, S>>>(
    within: Duration,
    mut pauses: impl Iterator<Item = Duration>,
    mut check: impl FnMut() -> Fut,
) -> Result<T, S> {
    let deadline = Instant::now() + within;
    loop {
        let seen = match check().await {
            Ok(value) => return Ok(value),
            Err(seen) => seen,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(seen);
        }
        let pause = pauses.next().unwrap_or(LONGEST_PAUSE);
        tokio::time::sleep(pause.min(deadline - now)).await;
    }
}

/// Runs `check` like [`until`] and returns its value; fails the test if
/// it does not hold within `within`, saying `what` was awaited and what
/// the check last saw.
pub async fn eventually<T, S: Display, Fut: Future<Output = Result<T, S>>>(
    what: &str,
    within: Duration,
    check: impl FnMut() -> Fut,
) -> T {
    match until(within, check).await {
        Ok(value) => value,
        Err(seen) => panic!("{what}: not within {within:?}; last seen: {seen}"),
    }
}

/// [`until`] for code outside an async runtime (a thread that blocks).
pub fn until_blocking<T, S>(
    within: Duration,
    mut check: impl FnMut() -> Result<T, S>,
) -> Result<T, S> {
    let deadline = Instant::now() + within;
    let mut pause = FIRST_PAUSE;
    loop {
        let seen = match check() {
            Ok(value) => return Ok(value),
            Err(seen) => seen,
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(seen);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = next_pause(pause);
    }
}

/// `Ok(seen)` when `done(&seen)` holds, else `Err(seen)`: the shape of a
/// check that looks at one value.
pub fn when<S>(seen: S, done: impl FnOnce(&S) -> bool) -> Result<S, S> {
    if done(&seen) { Ok(seen) } else { Err(seen) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_check_that_holds_later_gives_its_value() {
        let mut looks = 0;
        let got = eventually("the third look", Duration::from_secs(20), || {
            looks += 1;
            std::future::ready(if looks >= 3 { Ok(looks) } else { Err(looks) })
        })
        .await;
        assert_eq!(got, 3);
    }

    #[tokio::test]
    async fn a_check_that_never_holds_gives_what_it_last_saw() {
        let mut looks = 0;
        let last: Result<(), u32> = until(Duration::from_millis(50), || {
            looks += 1;
            std::future::ready(Err(looks))
        })
        .await;
        let seen = last.unwrap_err();
        assert!(seen > 1, "looked again before the deadline: {seen}");
        assert!(seen < 50, "backed off, no busy loop: {seen} looks in 50 ms");
    }

    #[tokio::test]
    #[should_panic(expected = "the answer: not within 20ms; last seen: 41")]
    async fn a_failed_wait_says_what_it_awaited_and_saw() {
        eventually("the answer", Duration::from_millis(20), async || {
            Err::<(), _>(41)
        })
        .await;
    }

    #[test]
    fn the_blocking_wait_backs_off_too() {
        let mut looks = 0u32;
        let seen = until_blocking(Duration::from_millis(50), || {
            looks += 1;
            Err::<(), _>(looks)
        })
        .unwrap_err();
        assert!((2..50).contains(&seen), "{seen} looks in 50 ms");
    }
}
