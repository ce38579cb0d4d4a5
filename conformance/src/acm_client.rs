//! ibacm's client protocol spoken byte by byte from rdma-core's `acm.h`
//! (not with local-sa's codec), for the tests and benchmarks that talk to
//! an ibacm socket as an independent client would.

use std::io::{Read, Write};

/// `ACM_OP_RESOLVE`.
pub const RESOLVE: u8 = 0x01;
/// The ACK bit of a reply's opcode.
pub const ACK: u8 = 0x80;
/// `ACM_EP_FLAG_DEST`.
pub const DEST: u32 = 1 << 1;
/// `ACM_EP_INFO_NAME`.
pub const TYPE_NAME: u16 = 0x01;
/// `ACM_EP_INFO_LID` (ibacm's extension, as ib_acme sends it).
pub const TYPE_LID: u16 = 0x05;
/// `ACM_EP_INFO_PATH`.
pub const TYPE_PATH: u16 = 0x10;
/// `ACM_STATUS_EINVAL`.
pub const EINVAL: u8 = 2;
/// `ACM_STATUS_ENODATA`.
pub const ENODATA: u8 = 3;

/// `struct acm_hdr`: version 1, opcode, status 0, data, length and TID in
/// host order (RESOLVE is not a network-order opcode).
pub fn header(opcode: u8, length: u16, tid: u64) -> Vec<u8> {
    let mut m = vec![1, opcode, 0, 0, 0, 0];
    m.extend(length.to_ne_bytes());
    m.extend(tid.to_ne_bytes());
    m
}

/// `struct acm_ep_addr_data`.
pub fn entry(flags: u32, kind: u16, info: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(72);
    e.extend(flags.to_ne_bytes());
    e.extend(kind.to_ne_bytes());
    e.extend([0, 0]);
    let mut data = [0u8; 64];
    data[..info.len()].copy_from_slice(info);
    e.extend(data);
    e
}

/// A RESOLVE of the path to `lid`.
pub fn resolve_lid(lid: u16, tid: u64) -> Vec<u8> {
    let mut m = header(RESOLVE, 16 + 72, tid);
    m.extend(entry(DEST, TYPE_LID, &lid.to_be_bytes()));
    m
}

/// A RESOLVE of the path to the host named `name` (at most 63 bytes).
pub fn resolve_name(name: &str, tid: u64) -> Vec<u8> {
    let mut m = header(RESOLVE, 16 + 72, tid);
    m.extend(entry(
        DEST,
        TYPE_NAME,
        &name.as_bytes()[..name.len().min(63)],
    ));
    m
}

/// One reply: (opcode, status, TID, entries).
pub fn read_reply(s: &mut impl Read) -> std::io::Result<(u8, u8, u64, Vec<u8>)> {
    let mut h = [0u8; 16];
    s.read_exact(&mut h)?;
    let len = usize::from(if h[1] & !ACK == RESOLVE {
        u16::from_ne_bytes([h[6], h[7]])
    } else {
        u16::from_be_bytes([h[6], h[7]])
    });
    if len < 16 {
        return Err(std::io::Error::other(format!(
            "a reply shorter than its header: {h:?}"
        )));
    }
    let mut body = vec![0u8; len - 16];
    s.read_exact(&mut body)?;
    let tid = u64::from_ne_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    Ok((h[1], h[2], tid, body))
}

/// The DLID of a reply's first entry if it is a PATH
/// (`ibv_path_record`: the DLID at byte 40, network order).
pub fn path_dlid(body: &[u8]) -> Option<u16> {
    if body.len() < 72 || u16::from_ne_bytes([body[4], body[5]]) != TYPE_PATH {
        return None;
    }
    Some(u16::from_be_bytes([body[8 + 40], body[8 + 41]]))
}

/// `client` once it has asked for the path to `dlid` under `tid` and
/// been answered with it; panics, saying what came, otherwise.
pub fn resolved<S: Read + Write>(mut client: S, dlid: u16, tid: u64) -> S {
    client
        .write_all(&resolve_lid(dlid, tid))
        .unwrap_or_else(|e| panic!("asking for the path to LID {dlid}: {e}"));
    let (_, status, answered_tid, body) = read_reply(&mut client)
        .unwrap_or_else(|e| panic!("the answer for the path to LID {dlid}: {e}"));
    assert_eq!(
        (status, answered_tid, path_dlid(&body)),
        (0, tid, Some(dlid)),
        "the answer for the path to LID {dlid}"
    );
    client
}
