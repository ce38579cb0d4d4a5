//! local-sa's ibacm socket taken as a hostile or a busy client would take
//! it, with messages built byte by byte from rdma-core's `acm.h` (not with
//! local-sa's codec): malformed messages get an error status or a closed
//! connection and never stop the daemon, and 100 clients resolving 1,000
//! paths each at once are all answered, each with its own path.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use conformance::acm_client::{
    ACK, DEST, EINVAL, ENODATA, RESOLVE, TYPE_LID, TYPE_NAME, entry, header, path_dlid, read_reply,
    resolve_lid,
};
use conformance::{LocalSa, SimulatedFabric, Topology};

fn connect(socket: &Path) -> UnixStream {
    let s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Sends `bytes`, closes the sending side, and says whether the daemon
/// answered (and with what status) or just closed.
fn send_and_close(socket: &Path, bytes: &[u8]) -> Option<(u8, u8)> {
    let mut s = connect(socket);
    s.write_all(bytes).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    read_reply(&mut s).ok().map(|(op, st, _, _)| (op, st))
}

/// Sends `bytes` and reads one reply, keeping the connection open.
fn ask(socket: &Path, bytes: &[u8]) -> (u8, u8) {
    let mut s = connect(socket);
    s.write_all(bytes).unwrap();
    let (op, st, _, _) = read_reply(&mut s)
        .unwrap_or_else(|e| panic!("no reply to {:?}...: {e}", &bytes[..24.min(bytes.len())]));
    (op, st)
}

#[test]
fn malformed_messages_get_an_error_or_a_closed_connection() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let socket = sa.acm_socket().to_owned();
    let dest = fabric.node("h9").unwrap().port().unwrap().lid;

    // Framing errors close the connection without a reply.
    assert_eq!(
        send_and_close(&socket, &[1, RESOLVE, 0]),
        None,
        "short header"
    );
    assert_eq!(
        send_and_close(&socket, &header(RESOLVE, 8, 1)),
        None,
        "a length shorter than the header"
    );
    let mut lying = header(RESOLVE, 16 + 72, 2);
    lying.extend([0u8; 10]);
    assert_eq!(send_and_close(&socket, &lying), None, "a length that lies");
    let mut nine = header(RESOLVE, 16 + 9 * 72, 3);
    for _ in 0..9 {
        nine.extend(entry(DEST, TYPE_LID, &dest.to_be_bytes()));
    }
    assert_eq!(send_and_close(&socket, &nine), None, "more than 8 entries");

    // Well-framed nonsense is answered, with the ACK bit, and an error.
    // Every opcode but RESOLVE carries its length in network order.
    let mut unknown_op = header(0x07, 0, 4);
    unknown_op[6..8].copy_from_slice(&16u16.to_be_bytes());
    assert_eq!(
        ask(&socket, &unknown_op),
        (0x07 | ACK, EINVAL),
        "unknown opcode"
    );
    let mut version = resolve_lid(dest, 5);
    version[0] = 2;
    assert_eq!(ask(&socket, &version).1, EINVAL, "unknown version");
    let mut odd_type = header(RESOLVE, 16 + 72, 6);
    odd_type.extend(entry(DEST, 0x33, &[1]));
    let (op, st) = ask(&socket, &odd_type);
    assert_eq!(op, RESOLVE | ACK);
    assert_ne!(st, 0, "an unknown address type is refused");
    let mut unterminated = header(RESOLVE, 16 + 72, 7);
    unterminated.extend(entry(DEST, TYPE_NAME, &[b'x'; 64]));
    assert_ne!(ask(&socket, &unterminated).1, 0, "an unterminated name");
    let mut ragged = header(RESOLVE, 16 + 40, 8);
    ragged.extend([0u8; 40]);
    assert_eq!(
        ask(&socket, &ragged).1,
        EINVAL,
        "a body of part of an entry"
    );
    let no_path = resolve_lid(999, 9);
    assert_eq!(
        ask(&socket, &no_path),
        (RESOLVE | ACK, ENODATA),
        "a LID nobody has: the master's NO_RECORDS"
    );

    // The daemon serves on, on a connection that already had an error too.
    let mut s = connect(&socket);
    s.write_all(&unknown_op).unwrap();
    s.write_all(&resolve_lid(dest, 10)).unwrap();
    assert_eq!(read_reply(&mut s).unwrap().1, EINVAL);
    let (op, st, tid, body) = read_reply(&mut s).unwrap();
    assert_eq!((op, st, tid), (RESOLVE | ACK, 0, 10));
    assert_eq!(path_dlid(&body), Some(dest));
    assert!(
        sa.wait_until("still running", Duration::from_secs(1), |_| true)
            .is_ok()
    );
    let (_, log) = sa.stop();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn a_hundred_clients_resolving_a_thousand_paths_each_are_all_answered() {
    const CLIENTS: usize = 100;
    const RESOLVES: usize = 1_000;
    const WINDOW: usize = 16;
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let socket = sa.acm_socket().to_owned();
    let lids: Vec<u16> = fabric
        .topology()
        .hcas()
        .iter()
        .map(|h| fabric.node(h).unwrap().port().unwrap().lid)
        .collect();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let socket = socket.clone();
            let lids = lids.clone();
            std::thread::spawn(move || {
                let mut s = connect(&socket);
                let mut answered = 0;
                let mut sent = 0;
                // Pipelined: up to WINDOW requests out at once.
                while answered < RESOLVES {
                    while sent < RESOLVES && sent - answered < WINDOW {
                        let lid = lids[(c + sent) % lids.len()];
                        s.write_all(&resolve_lid(lid, sent as u64)).unwrap();
                        sent += 1;
                    }
                    let (op, st, tid, body) = read_reply(&mut s).unwrap();
                    assert_eq!((op, st), (RESOLVE | ACK, 0), "client {c}, request {tid}");
                    let lid = lids[(c + tid as usize) % lids.len()];
                    assert_eq!(
                        path_dlid(&body),
                        Some(lid),
                        "client {c}: request {tid}'s own path"
                    );
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, CLIENTS * RESOLVES);
    drop(sa);
}
