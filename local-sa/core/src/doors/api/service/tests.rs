//! The local API door without a socket: frames in, requests and error
//! frames out, who may ask what.

use std::time::Instant;

use super::*;
use crate::doors::api::wire::{kind, request_frame};
use crate::request::{LocalBody, Request, RequestKind};
use mad_codec::MadStatus;

const ROOT: LocalUser = LocalUser {
    uid: 0,
    privileged: true,
};
const NOBODY: LocalUser = LocalUser {
    uid: 65534,
    privileged: false,
};

fn outputs(door: &mut ApiService) -> Vec<Output> {
    std::iter::from_fn(|| door.poll_output()).collect()
}

fn opened(user: LocalUser) -> ApiService {
    let mut door = ApiService::new(3);
    door.handle_input(Instant::now(), Input::Opened { conn: 7, user });
    assert_eq!(
        outputs(&mut door),
        vec![Output::Registrant { conn: 7, user }],
        "the agents learn whose connection it is"
    );
    door
}

fn message(door: &mut ApiService, bytes: &[u8]) -> Vec<Output> {
    door.handle_input(Instant::now(), Input::Message { conn: 7, bytes });
    outputs(door)
}

/// The API status of an error frame sent to connection 7.
fn error_status(o: &Output) -> u16 {
    let Output::Send { conn: 7, bytes } = o else {
        panic!("not a frame for 7: {o:?}")
    };
    let f = Frame::decode(&bytes[4..]).unwrap();
    assert_eq!(f.kind, kind::ERROR);
    f.status
}

#[test]
fn a_request_goes_to_the_ports_agent_with_its_number() {
    let mut door = opened(NOBODY);
    let out = message(&mut door, &request_frame(&Request::Hello, 42).encode());
    assert_eq!(
        out,
        vec![Output::Ask {
            agent: 3,
            conn: 7,
            id: 42,
            request: Request::Hello
        }]
    );
}

#[test]
fn cache_control_is_for_administrators_only() {
    let flush = request_frame(&Request::Flush, 5).encode();
    let mut door = opened(NOBODY);
    let out = message(&mut door, &flush);
    assert_eq!(out.len(), 1);
    assert_eq!(error_status(&out[0]), api_error::DENIED);
    let mut door = opened(ROOT);
    assert!(matches!(
        message(&mut door, &flush)[..],
        [Output::Ask {
            request: Request::Flush,
            ..
        }]
    ));
}

#[test]
fn bad_frames_get_an_error_and_only_lost_framing_closes() {
    let mut door = opened(NOBODY);
    let mut wrong_version = request_frame(&Request::Hello, 9).encode().to_vec();
    wrong_version[4] = 9;
    let out = message(&mut door, &wrong_version);
    assert_eq!(out.len(), 1, "answered, kept open");
    assert_eq!(error_status(&out[0]), api_error::VERSION);
    door.handle_input(Instant::now(), Input::Unframeable { conn: 7 });
    let out = outputs(&mut door);
    assert_eq!(error_status(&out[0]), api_error::LENGTH);
    assert_eq!(out[1], Output::Close { conn: 7 }, "after the error frame");
}

#[test]
fn a_reply_becomes_frames_for_its_connection() {
    let mut door = opened(NOBODY);
    let reply = LocalReply {
        conn: 7,
        request: 42,
        answers: Some(RequestKind::Hello),
        status: MadStatus::OK,
        from_master: false,
        body: LocalBody::Empty,
    };
    door.handle_reply(Instant::now(), &reply);
    let out = outputs(&mut door);
    assert_eq!(out.len(), 1);
    let Output::Send { conn: 7, bytes } = &out[0] else {
        panic!("{out:?}")
    };
    let f = Frame::decode(&bytes[4..]).unwrap();
    assert_eq!(f.request, 42);
}

#[test]
fn a_frame_announcing_an_impossible_length_cannot_be_framed() {
    let framing = ApiService::new(0).framing().unwrap();
    assert_eq!(framing.header_len, 4);
    assert!((framing.body_len)(&[0, 0, 0, 12]).is_ok());
    assert!((framing.body_len)(&[0, 0, 0, 3]).is_err());
    assert!((framing.body_len)(&[0xff, 0, 0, 0]).is_err());
}
