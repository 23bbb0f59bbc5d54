//! The session's state without I/O: frames and keys in, screen bytes and
//! frames for the gateway out.

use super::*;
use crate::console::protocol::Participant;
use crate::port::Holder;

fn holder(session: u64, who: &str) -> Holder {
    Holder {
        session,
        who: who.to_owned(),
        since: "2025-01-01T10:00:00Z".to_owned(),
        token: String::new(),
        config_token: false,
    }
}

fn attached(writing: bool, holder: Option<Holder>) -> ServerMessage {
    ServerMessage::Attached {
        port: "sw1".to_owned(),
        session: 7,
        you: "alice on console (unix)".to_owned(),
        writing,
        start: 100,
        head: 120,
        log: "1f".to_owned(),
        state: PortState::Open,
        holder,
        watchers: vec![],
    }
}

fn json_frame(message: &ServerMessage) -> Frame {
    Frame::Json(serde_json::to_string(message).unwrap())
}

fn data(offset: u64, bytes: &[u8]) -> Frame {
    Frame::Data(
        DataChunk {
            offset,
            bytes: bytes.to_vec(),
        }
        .encode(),
    )
}

fn screen(s: &mut Session) -> String {
    let bytes: Vec<u8> = s.screen.drain(..).flatten().collect();
    String::from_utf8(bytes).unwrap()
}

fn sent(s: &mut Session) -> Vec<Frame> {
    s.outbox.drain(..).collect()
}

fn session(mode: Mode, writing: bool) -> Session {
    let mut s = Session::new("sw1", mode, 20);
    s.attached(attached(writing, writing.then(|| holder(7, "alice"))))
        .unwrap();
    s
}

#[test]
fn attached_says_who_you_are_and_whether_you_write() {
    let mut s = session(Mode::Attach, true);
    assert_eq!(
        screen(&mut s),
        "[serialgate: attached to sw1 as alice on console (unix): you hold the write]\r\n\
         [serialgate: Ctrl-] ? for help, Ctrl-] . to detach; the last 20 line(s) follow]\r\n"
    );
    let mut s = Session::new("sw1", Mode::Attach, 20);
    s.attached(attached(
        false,
        Some(holder(3, "session 3 (client claude-code)")),
    ))
    .unwrap();
    assert!(screen(&mut s).contains(
        "you watch; session 3 (client claude-code) (since 2025-01-01T10:00:00Z) holds the \
         write (Ctrl-] f takes it)"
    ));
    let mut s = session(Mode::Spy, false);
    assert!(screen(&mut s).contains("spying on sw1 as alice on console (unix): you never write"));
}

#[test]
fn losing_the_write_says_how_to_take_it_back() {
    let mut s = session(Mode::Attach, true);
    screen(&mut s);
    s.on_frame(data(120, b"SW1#"));
    let end = s.on_frame(json_frame(&ServerMessage::Holder {
        holder: Some(holder(3, "session 3")),
        what: "session 3 took the write hold from alice".to_owned(),
    }));
    assert_eq!(end, None);
    assert_eq!(
        screen(&mut s),
        "SW1#\r\n[serialgate: session 3 took the write hold from alice]\r\n\
         [serialgate: you are watching now; Ctrl-] f takes the write back]\r\n"
    );
    s.on_frame(json_frame(&ServerMessage::Holder {
        holder: Some(holder(7, "alice")),
        what: "alice took the write hold".to_owned(),
    }));
    assert!(screen(&mut s).ends_with("[serialgate: you hold the write now]\r\n"));
}

#[test]
fn state_changes_and_replays_are_marked() {
    let mut s = session(Mode::Attach, true);
    screen(&mut s);
    s.on_frame(json_frame(&ServerMessage::State {
        state: PortState::Lost,
    }));
    s.on_frame(json_frame(&ServerMessage::State {
        state: PortState::Open,
    }));
    let text = screen(&mut s);
    assert!(text.contains("[serialgate: sw1 is lost"), "{text}");
    assert!(
        text.ends_with("[serialgate: sw1 is open again]\r\n"),
        "{text}"
    );
    s.on_frame(json_frame(&ServerMessage::Replay { start: 10, end: 20 }));
    s.on_frame(data(10, b"abc\r\n"));
    s.on_frame(data(15, b"SW1#xyz"));
    assert_eq!(
        screen(&mut s),
        "[serialgate: replay of the last lines:]\r\nabc\r\nSW1#x\r\n\
         [serialgate: end of replay]\r\nyz"
    );
}

#[test]
fn errors_are_not_repeated_while_nothing_else_is_printed() {
    let mut s = session(Mode::Attach, false);
    screen(&mut s);
    let busy = ServerMessage::Error {
        code: "busy".to_owned(),
        message: "session 3 holds the write".to_owned(),
    };
    for _ in 0..5 {
        s.on_keys(b"x");
        s.on_frame(json_frame(&busy));
    }
    assert_eq!(
        screen(&mut s),
        "[serialgate: busy: session 3 holds the write]\r\n"
    );
    assert_eq!(
        sent(&mut s).len(),
        5,
        "typed bytes are sent, the server refuses"
    );
}

#[test]
fn spying_sends_no_data_and_says_so_once() {
    let mut s = session(Mode::Spy, false);
    screen(&mut s);
    for _ in 0..3 {
        assert_eq!(s.on_keys(b"show clock\r\x1d\x1d"), None);
    }
    assert_eq!(
        screen(&mut s),
        "[serialgate: spying: typed keys are not sent]\r\n"
    );
    s.on_keys(b"\x1dw\x1db\x1df");
    assert_eq!(
        sent(&mut s),
        vec![Frame::Json(r#"{"type":"who"}"#.to_owned())]
    );
}

#[test]
fn escape_commands_become_messages() {
    let mut s = session(Mode::Attach, true);
    screen(&mut s);
    assert_eq!(
        s.on_keys(b"ab\x1dr\x1dw\x1db\x1df\x1ds\x1da\x1d\x1dcd"),
        None
    );
    let frames = sent(&mut s);
    let json = |t: &str| Frame::Json(t.to_owned());
    assert_eq!(
        frames,
        vec![
            Frame::Data(b"ab".to_vec()),
            json(r#"{"type":"replay","lines":20}"#),
            json(r#"{"type":"who"}"#),
            json(r#"{"type":"break","ms":null}"#),
            json(r#"{"type":"force"}"#),
            json(r#"{"type":"release"}"#),
            json(r#"{"type":"acquire"}"#),
            Frame::Data(b"\x1dcd".to_vec()),
        ]
    );
    assert_eq!(s.on_keys(b"\x1dz"), None);
    assert!(screen(&mut s).contains("Ctrl-] z is no command (not sent); Ctrl-] ? for help"));
    assert!(sent(&mut s).is_empty());
    assert_eq!(s.on_keys(b"\x1d."), Some(End::Detached));
}

#[test]
fn bye_and_hostile_strings() {
    let mut s = session(Mode::Attach, true);
    screen(&mut s);
    s.on_frame(json_frame(&ServerMessage::Joined {
        participant: Participant {
            session: 9,
            who: "mallory\x1b]0;owned\x07".to_owned(),
            spy: false,
            since: "now".to_owned(),
        },
    }));
    let text = screen(&mut s);
    assert!(
        text.contains("mallory\\x1b]0;owned\\x07 (since now) joined"),
        "{text}"
    );
    assert!(!text.contains('\x1b'));
    let end = s.on_frame(json_frame(&ServerMessage::Bye {
        reason: "shutting down\x1b[2J".to_owned(),
    }));
    assert_eq!(end, Some(End::Bye("shutting down\\x1b[2J".to_owned())));
    assert_eq!(
        s.farewell(&end.unwrap()),
        b"[serialgate: the gateway ended the session: shutting down\\x1b[2J]\r\n"
    );
}

#[test]
fn unknown_messages_are_ignored_once() {
    let mut s = session(Mode::Attach, true);
    screen(&mut s);
    for _ in 0..2 {
        assert_eq!(
            s.on_frame(Frame::Json(r#"{"type":"future_thing","x":1}"#.to_owned())),
            None
        );
    }
    assert_eq!(
        screen(&mut s),
        "[serialgate: ignored a message from the gateway that this client does not know \
         (type future_thing)]\r\n"
    );
    assert!(matches!(
        s.on_frame(Frame::Data(vec![0; 3])),
        Some(End::Failed(_))
    ));
}

#[test]
fn a_line_waiting_for_approval_is_shown_and_decided_by_its_keys() {
    let mut s = session(Mode::Attach, true);
    let _ = screen(&mut s);
    // Nothing waits: the keys say so and send nothing.
    assert_eq!(s.on_keys(b"\x1dy"), None);
    assert!(screen(&mut s).contains("no line waits for approval"));
    assert!(sent(&mut s).is_empty());
    let pending = |id: u64, line: &str| crate::console::protocol::PendingApproval {
        id,
        port: "sw1".into(),
        who: "session 3 (client agent, token noc)".into(),
        token: "noc".into(),
        line: line.into(),
        mode: "exec".into(),
        reason: "\"reload\" matches rule \"reload\"".into(),
        since: "2026-01-01T00:00:00Z".into(),
        expires_in_s: 300,
    };
    let list = vec![pending(7, "reload\x1b[2J"), pending(8, "write erase")];
    let message = ServerMessage::Approvals { pending: list };
    assert_eq!(s.on_frame(json_frame(&message)), None);
    let shown = screen(&mut s);
    // Each on its own line, who asks, the line escaped, the keys.
    assert!(
        shown.contains("[serialgate: approval wanted: session 3 (client agent, token noc) asks to send \"reload\\u{1b}[2J\" (exec mode) on sw1")
            && shown.contains("Ctrl-] y approves, Ctrl-] n denies (request 7"),
        "{shown:?}"
    );
    assert!(!shown.contains('\x1b'), "{shown:?}");
    // The oldest is decided, naming the exact text it was shown.
    assert_eq!(s.on_keys(b"\x1dn"), None);
    assert_eq!(
        sent(&mut s),
        vec![Frame::Json(
            r#"{"type":"decide","id":7,"line":"reload\u001b[2J","approve":false}"#.to_owned()
        )]
    );
    let message = ServerMessage::Approvals {
        pending: vec![pending(8, "write erase")],
    };
    s.on_frame(json_frame(&message));
    assert!(screen(&mut s).contains("request 7 no longer waits for approval"));
    s.on_keys(b"\x1dy");
    assert_eq!(
        sent(&mut s),
        vec![Frame::Json(
            r#"{"type":"decide","id":8,"line":"write erase","approve":true}"#.to_owned()
        )]
    );
}
