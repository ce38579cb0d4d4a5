//! What this node's local-sa says of itself through its local API: its
//! status and the registrations it holds.

use std::path::Path;

use local_sa_core::request::{Request, StatusReport};

use super::registrations::PortRegistrations;
use crate::local_api::Connection;

/// local-sa's status and its registrations, through its local API; each
/// `Err` says why it could not be had.
pub(super) async fn status_and_registrations(
    socket: &Path,
) -> (
    Result<StatusReport, String>,
    Result<PortRegistrations, String>,
) {
    let mut conn = match Connection::open(socket, false) {
        Ok(c) => c,
        Err(f) => return (Err(f.message.clone()), Err(f.message)),
    };
    let status = status_on(&mut conn).await;
    let held = PortRegistrations::fetch(&mut conn)
        .await
        .map_err(|f| f.message);
    (status, held)
}

/// local-sa's status now, through its local API at `socket`.
pub(super) async fn status_of(socket: &Path) -> Result<StatusReport, String> {
    let mut conn = Connection::open(socket, false).map_err(|f| f.message)?;
    status_on(&mut conn).await
}

async fn status_on(conn: &mut Connection) -> Result<StatusReport, String> {
    let answer = conn.call(&Request::Status).await.map_err(|f| f.message)?;
    String::from_utf8(answer.body.to_vec())
        .map(|t| StatusReport::from_text(&t))
        .map_err(|_| "local-sa's STATUS answer is not text".to_owned())
}
