//! A sender and a receiver over an in-memory line that loses and damages
//! what crosses it, under a virtual clock: every protocol, every size
//! around the block boundaries, and random faults within the retry limit
//! all end with the file delivered exactly; past it, both sides stop.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

/// What the line does to the n-th write of one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Lost whole.
    Drop,
    /// One byte (at this index, modulo the write's length) flipped.
    Flip(usize),
}

#[derive(Default, Clone, Debug)]
struct Line {
    /// Faults of the sender's writes, by write index.
    to_receiver: Vec<(usize, Fault)>,
    /// Faults of the receiver's writes, by write index.
    to_sender: Vec<(usize, Fault)>,
}

fn apply(faults: &[(usize, Fault)], index: usize, mut bytes: Vec<u8>) -> Option<Vec<u8>> {
    match faults.iter().find(|(i, _)| *i == index).map(|(_, f)| *f) {
        None => Some(bytes),
        Some(Fault::Drop) => None,
        Some(Fault::Flip(at)) => {
            let at = at % bytes.len();
            bytes[at] ^= 0x5a;
            Some(bytes)
        }
    }
}

struct Outcome {
    sent: Result<Stats, Failure>,
    received: Result<Stats, Failure>,
    data: Vec<u8>,
    header: Option<FileHeader>,
    elapsed: Duration,
}

fn timing() -> Timing {
    Timing {
        answer: Duration::from_secs(1),
        start: Duration::from_secs(10),
        start_interval: Duration::from_millis(300),
        purge: Duration::from_millis(100),
        max_retries: 10,
    }
}

/// Runs both sides until both are over (at most an hour of virtual time).
fn run(protocol: Protocol, checksum: bool, file: &[u8], line: &Line) -> Outcome {
    let t0 = Instant::now();
    let mut now = t0;
    let mut sender = Sender::new(protocol, "image.bin", file.to_vec(), timing(), now);
    let mut receiver = Receiver::new(protocol, checksum, 1 << 30, timing(), now);
    let (mut sender_writes, mut receiver_writes) = (0, 0);
    let mut data = Vec::new();
    let mut sent = None;
    let mut received = None;
    while now < t0 + Duration::from_secs(3600) {
        let mut waits = Vec::new();
        let mut moved = false;
        if sent.is_none() {
            match sender.poll() {
                Poll::Write(bytes) => {
                    moved = true;
                    if let Some(bytes) = apply(&line.to_receiver, sender_writes, bytes) {
                        receiver.input(&bytes, now);
                    }
                    sender_writes += 1;
                }
                Poll::Wait(deadline) => waits.push(deadline),
                Poll::Done => sent = Some(Ok(sender.stats())),
                Poll::Failed(f) => sent = Some(Err(f)),
            }
        }
        {
            match receiver.poll() {
                Poll::Write(bytes) => {
                    moved = true;
                    if let Some(bytes) = apply(&line.to_sender, receiver_writes, bytes) {
                        sender.input(&bytes, now);
                    }
                    receiver_writes += 1;
                }
                Poll::Wait(deadline) => waits.push(deadline),
                Poll::Done => {
                    received.get_or_insert(Ok(receiver.stats()));
                }
                Poll::Failed(f) => {
                    received.get_or_insert(Err(f));
                }
            }
        }
        data.extend(receiver.take_data());
        if let (Some(s), Some(r)) = (&sent, &received) {
            return Outcome {
                sent: s.clone(),
                received: r.clone(),
                data,
                header: receiver.header().cloned(),
                elapsed: now - t0,
            };
        }
        if !moved {
            // Both wait (or one is over): time runs to the next deadline.
            let Some(&next) = waits.iter().min() else {
                break;
            };
            now = now.max(next);
            sender.timeout(now);
            receiver.timeout(now);
        }
    }
    // One side is over and the other waits in vain: end it by its clock.
    for _ in 0..200 {
        now += Duration::from_secs(20);
        sender.timeout(now);
        receiver.timeout(now);
        while let Poll::Write(_) = sender.poll() {}
        while let Poll::Write(_) = receiver.poll() {}
    }
    let end = |p: Poll, stats: Stats| match p {
        Poll::Done => Ok(stats),
        Poll::Failed(f) => Err(f),
        other => panic!("still running: {other:?}"),
    };
    Outcome {
        sent: end(sender.poll(), sender.stats()),
        received: end(receiver.poll(), receiver.stats()),
        data,
        header: receiver.header().cloned(),
        elapsed: now - t0,
    }
}

/// What an XMODEM receiver keeps: the file padded to its blocks.
fn padded(file: &[u8], protocol: Protocol, checksum: bool) -> Vec<u8> {
    if protocol == Protocol::Ymodem {
        return file.to_vec();
    }
    let _ = checksum; // only an XMODEM receiver asks for the checksum
    let big = protocol == Protocol::Xmodem1k;
    let mut out = Vec::new();
    for chunk in file.chunks(if big { 1024 } else { 128 }) {
        let frame = if chunk.len() <= 128 { 128 } else { 1024 };
        out.extend_from_slice(chunk);
        out.resize(out.len() + frame - chunk.len(), PAD);
    }
    out
}

fn file(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn every_protocol_and_size_around_the_block_boundaries() {
    for protocol in [Protocol::Xmodem, Protocol::Xmodem1k, Protocol::Ymodem] {
        for checksum in [false, true] {
            for len in [0, 1, 127, 128, 129, 1023, 1024, 1025, 1153, 300_000] {
                let f = file(len);
                let o = run(protocol, checksum, &f, &Line::default());
                let label = format!("{protocol:?} checksum={checksum} len={len}");
                let sent = o.sent.unwrap_or_else(|e| panic!("{label}: {e}"));
                let got = o.received.unwrap_or_else(|e| panic!("{label}: {e}"));
                assert!(
                    o.data == padded(&f, protocol, checksum),
                    "{label}: {} bytes",
                    o.data.len()
                );
                assert_eq!((sent.retries, got.retries), (0, 0), "{label}");
                assert_eq!(sent.blocks, got.blocks, "{label}");
                if protocol == Protocol::Ymodem {
                    let h = o.header.expect("a header");
                    assert_eq!((h.name.as_str(), h.size), ("image.bin", Some(len as u64)));
                }
            }
        }
    }
}

#[test]
fn one_k_blocks_cost_less_of_the_line() {
    let f = file(1 << 20);
    let o = run(Protocol::Xmodem1k, false, &f, &Line::default());
    let s = o.sent.unwrap();
    assert_eq!(s.blocks, 1024);
    // 1029 bytes a frame (1024 + 5) plus one EOT.
    assert_eq!(s.line_bytes, 1024 * 1029 + 1);
    let small = run(Protocol::Xmodem, false, &f, &Line::default())
        .sent
        .unwrap();
    assert_eq!(small.line_bytes, 8192 * 133 + 1);
}

#[test]
fn a_damaged_block_is_refused_and_sent_again() {
    // Sender write 0 is block 1 (XMODEM-CRC); write 3 is block 4.
    let line = Line {
        to_receiver: vec![(3, Fault::Flip(500)), (4, Fault::Flip(0))],
        ..Line::default()
    };
    let f = file(10_000);
    let o = run(Protocol::Xmodem1k, false, &f, &line);
    let s = o.sent.unwrap();
    assert_eq!(s.retries, 2);
    assert_eq!(o.received.unwrap().retries, 2);
    assert!(o.data == padded(&f, Protocol::Xmodem1k, false));
}

#[test]
fn a_lost_ack_makes_a_repeat_the_receiver_does_not_keep() {
    // Receiver write 0 is the C, 1 the ACK of block 1.
    let line = Line {
        to_sender: vec![(1, Fault::Drop)],
        ..Line::default()
    };
    let f = file(5000);
    let o = run(Protocol::Xmodem1k, false, &f, &line);
    assert_eq!(o.sent.unwrap().retries, 1);
    assert!(o.data == padded(&f, Protocol::Xmodem1k, false));
}

#[test]
fn a_dead_line_ends_both_sides_within_their_limits() {
    let line = Line {
        to_receiver: (1..400).map(|i| (i, Fault::Drop)).collect(),
        ..Line::default()
    };
    let o = run(Protocol::Xmodem, false, &file(1000), &line);
    assert_eq!(o.sent, Err(Failure::TooManyRetries(10)));
    assert!(
        matches!(o.received, Err(Failure::TooManyRetries(_))),
        "{:?}",
        o.received
    );
    assert!(o.elapsed < Duration::from_secs(300), "{:?}", o.elapsed);
}

#[test]
fn nobody_there_is_no_start() {
    let now = Instant::now();
    let mut s = Sender::new(Protocol::Xmodem, "f", vec![1, 2, 3], timing(), now);
    let Poll::Wait(deadline) = s.poll() else {
        panic!()
    };
    assert_eq!(deadline, now + timing().start);
    s.timeout(now + Duration::from_secs(1));
    assert!(matches!(s.poll(), Poll::Wait(_)), "not yet");
    s.timeout(deadline);
    assert_eq!(s.poll(), Poll::Failed(Failure::NoStart));
    let mut r = Receiver::new(Protocol::Xmodem, false, 100, timing(), now);
    let mut asked = 0;
    let mut t = now;
    loop {
        match r.poll() {
            Poll::Write(b) => {
                assert_eq!(b, vec![CRC_START]);
                asked += 1;
            }
            Poll::Wait(d) => {
                t = d;
                r.timeout(t);
            }
            Poll::Failed(f) => {
                assert_eq!(f, Failure::NoStart);
                break;
            }
            Poll::Done => panic!(),
        }
    }
    assert!(t >= now + timing().start);
    assert!(asked >= 30, "asked {asked} times");
}

/// Drives `s` as a receiver that acknowledges every frame (asking for the
/// next file after YMODEM's header and EOT) until the last step (XMODEM's
/// EOT, YMODEM's null header), which it answers with `answer`; what the
/// sender wrote.
fn ack_until_the_end(s: &mut Sender, answer: &[u8], now: Instant) -> Vec<Vec<u8>> {
    let mut written = Vec::new();
    s.input(b"C", now);
    while let Poll::Write(bytes) = s.poll() {
        let block_zero = bytes.len() == 133 && bytes[1] == 0;
        let null_header = block_zero && bytes[3..131].iter().all(|&b| b == 0);
        let reply: Vec<u8> = match (&bytes[..], block_zero, null_header) {
            (_, _, true) => answer.to_vec(),
            ([EOT], _, _)
                if !written
                    .iter()
                    .any(|w: &Vec<u8>| w.len() == 133 && w[1] == 0) =>
            {
                answer.to_vec()
            }
            ([EOT], _, _) | (_, true, false) => vec![ACK, CRC_START],
            _ => vec![ACK],
        };
        written.push(bytes);
        s.input(&reply, now);
    }
    written
}

/// lrzsz on a pseudo-terminal drops its last ACK as it exits, and its
/// shell prints the prompt: the sender ends there, saying the end was not
/// confirmed, and sends no EOT again (into a shell, EOT is Ctrl-D).
#[test]
fn a_receiver_back_at_its_prompt_after_the_end_ends_the_send() {
    let now = Instant::now();
    let mut s = Sender::new(Protocol::Xmodem1k, "f", file(3000), timing(), now);
    let written = ack_until_the_end(&mut s, b"\r\nlab$ ", now);
    assert_eq!(s.poll(), Poll::Done);
    assert!(s.stats().end_unconfirmed);
    assert_eq!(s.stats().blocks, 3);
    assert_eq!(written.iter().filter(|w| **w == [EOT]).count(), 1);

    // Acknowledged, it is confirmed.
    let mut s = Sender::new(Protocol::Xmodem1k, "f", file(3000), timing(), now);
    ack_until_the_end(&mut s, &[ACK], now);
    assert_eq!(s.poll(), Poll::Done);
    assert!(!s.stats().end_unconfirmed);

    // YMODEM's last step is the null header that ends the batch.
    let mut s = Sender::new(Protocol::Ymodem, "f", file(3000), timing(), now);
    let written = ack_until_the_end(&mut s, b"lab$ ", now);
    assert_eq!(s.poll(), Poll::Done);
    assert!(s.stats().end_unconfirmed);
    assert_eq!(s.stats().blocks, 3);
    assert_eq!(written.iter().filter(|w| **w == [EOT]).count(), 1);

    // Text before the end is not taken for it: a block still needs its ACK.
    let mut s = Sender::new(Protocol::Xmodem1k, "f", file(3000), timing(), now);
    s.input(b"C", now);
    let Poll::Write(_) = s.poll() else { panic!() };
    s.input(b"lab$ ", now);
    assert!(matches!(s.poll(), Poll::Wait(_)));
}

/// A receiver's NAK damaged into one letter after the last EOT is not its
/// shell's prompt: the NAK that follows gets the EOT again, and a letter
/// followed by quiet ends the send unconfirmed once the tries left would
/// have waited, sending nothing more.
#[test]
fn noise_after_the_end_is_not_taken_for_a_prompt() {
    let now = Instant::now();
    let mut s = Sender::new(Protocol::Xmodem, "f", file(200), timing(), now);
    let written = ack_until_the_end(&mut s, &[NAK ^ 0x5a], now);
    assert_eq!(written.iter().filter(|w| **w == [EOT]).count(), 1);
    let Poll::Wait(deadline) = s.poll() else {
        panic!("ended on one letter: {:?}", s.poll())
    };
    s.input(&[NAK], now);
    assert_eq!(s.poll(), Poll::Write(vec![EOT]), "the EOT again");
    s.input(&[ACK], now);
    assert_eq!(s.poll(), Poll::Done);
    assert!(!s.stats().end_unconfirmed);

    let mut s = Sender::new(Protocol::Xmodem, "f", file(200), timing(), now);
    ack_until_the_end(&mut s, b"O", now);
    let Poll::Wait(deadline_2) = s.poll() else {
        panic!()
    };
    assert_eq!(deadline_2, deadline);
    let mut t = deadline_2;
    let mut waits = 0;
    while let Poll::Wait(next) = s.poll() {
        t = t.max(next);
        s.timeout(t);
        waits += 1;
        assert!(waits <= timing().max_retries, "still waiting at {waits}");
    }
    assert_eq!(s.poll(), Poll::Done);
    assert!(s.stats().end_unconfirmed);
    assert!(t - now >= timing().answer * (timing().max_retries - 1));
}

#[test]
fn can_can_ends_either_side_and_cancel_sends_it() {
    let now = Instant::now();
    let mut s = Sender::new(Protocol::Xmodem1k, "f", file(4096), timing(), now);
    s.input(b"C", now);
    assert!(matches!(s.poll(), Poll::Write(b) if b[0] == STX));
    s.input(&[ACK], now);
    assert!(matches!(s.poll(), Poll::Write(_)));
    s.input(&[CAN], now);
    assert!(matches!(s.poll(), Poll::Wait(_)), "one CAN is line noise");
    s.input(&[CAN], now);
    assert_eq!(s.poll(), Poll::Failed(Failure::CancelledByPeer));

    let mut s = Sender::new(Protocol::Xmodem1k, "f", file(4096), timing(), now);
    s.input(b"C", now);
    let _ = s.poll();
    s.cancel();
    assert_eq!(s.poll(), Poll::Write(CANCEL.to_vec()));
    assert_eq!(s.poll(), Poll::Failed(Failure::Cancelled));

    let mut r = Receiver::new(Protocol::Ymodem, false, 1 << 20, timing(), now);
    assert_eq!(r.poll(), Poll::Write(vec![CRC_START]));
    r.input(&[CAN, CAN], now);
    assert_eq!(r.poll(), Poll::Failed(Failure::CancelledByPeer));
    let mut r = Receiver::new(Protocol::Ymodem, false, 1 << 20, timing(), now);
    let _ = r.poll();
    r.cancel();
    assert_eq!(r.poll(), Poll::Write(CANCEL.to_vec()));
    assert_eq!(r.poll(), Poll::Failed(Failure::Cancelled));
}

#[test]
fn text_around_the_start_request_is_not_taken_for_it() {
    let now = Instant::now();
    let mut s = Sender::new(Protocol::Xmodem1k, "f", file(10), timing(), now);
    s.input(b"Ready to receive file Cat.bin ... Connect now\r\n", now);
    assert!(matches!(s.poll(), Poll::Wait(_)), "C inside words");
    s.input(b"\r\nC", now);
    assert!(matches!(s.poll(), Poll::Write(b) if b[0] == SOH));
    let mut s = Sender::new(Protocol::Xmodem, "f", file(10), timing(), now);
    s.input(b"waiting... CCC", now);
    assert!(matches!(s.poll(), Poll::Write(_)));
    assert_eq!(s.check(), Check::Crc16);
    let mut s = Sender::new(Protocol::Xmodem, "f", file(10), timing(), now);
    s.input(&[NAK], now);
    assert!(matches!(s.poll(), Poll::Write(b) if b.len() == 132));
    assert_eq!(s.check(), Check::Checksum);
}

#[test]
fn a_file_over_the_limit_is_cancelled() {
    let now = Instant::now();
    let mut s = Sender::new(Protocol::Ymodem, "big", file(5000), timing(), now);
    let mut r = Receiver::new(Protocol::Ymodem, false, 4096, timing(), now);
    let mut cancelled = false;
    for _ in 0..10 {
        if let Poll::Write(b) = r.poll() {
            cancelled |= b == CANCEL;
            s.input(&b, now);
        }
        if let Poll::Write(b) = s.poll() {
            r.input(&b, now);
        }
    }
    assert!(cancelled);
    assert_eq!(s.poll(), Poll::Failed(Failure::CancelledByPeer));
    assert!(matches!(r.poll(), Poll::Failed(Failure::Protocol(why)) if why.contains("4096")));
}

fn faults(max: usize) -> impl Strategy<Value = Vec<(usize, Fault)>> {
    prop::collection::vec(
        (
            0usize..60,
            prop_oneof![Just(Fault::Drop), (0usize..2000).prop_map(Fault::Flip)],
        ),
        0..max,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any few faults on either direction: the file arrives exact, and the
    /// sender counted a retry for each block the receiver had to see again.
    #[test]
    fn faults_within_the_limit_still_deliver_the_file_exactly(
        len in 0usize..20_000,
        protocol in prop_oneof![Just(Protocol::Xmodem), Just(Protocol::Xmodem1k), Just(Protocol::Ymodem)],
        checksum in any::<bool>(),
        to_receiver in faults(6),
        to_sender in faults(4),
    ) {
        let line = Line { to_receiver, to_sender };
        let f = file(len);
        let o = run(protocol, checksum, &f, &line);
        let sent = o.sent.map_err(|e| TestCaseError::fail(format!("sender: {e}")))?;
        o.received.map_err(|e| TestCaseError::fail(format!("receiver: {e}")))?;
        prop_assert!(o.data == padded(&f, protocol, checksum), "{} bytes received", o.data.len());
        let faulted = line.to_receiver.len() + line.to_sender.len();
        prop_assert!(sent.retries as usize <= faulted * 2, "{} retries for {} faults", sent.retries, faulted);
    }
}
