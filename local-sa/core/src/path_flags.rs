//! What a path entry is for, as ibacm's replies (`ibv_path_data`,
//! `infiniband/sa.h`) and the kernel's RDMA_NL_LS (`ib_path_rec_data`,
//! `rdma/ib_user_sa.h`) flag it: the two headers give the same bits. The
//! doors that hand out paths share them from here; a door's own request
//! flags (ibacm's SOURCE and DEST, in the same bits) stay with its wire
//! format.

/// The path for management datagrams (the CM's).
pub const GMP: u32 = 1 << 0;
/// The primary path.
pub const PRIMARY: u32 = 1 << 1;
/// An alternate path (for APM).
pub const ALTERNATE: u32 = 1 << 2;
/// The forward data path.
pub const OUTBOUND: u32 = 1 << 3;
/// The inbound data path.
pub const INBOUND: u32 = 1 << 4;
/// The inbound data path, given reversed (as the outbound one is).
pub const INBOUND_REVERSE: u32 = 1 << 5;
/// Both ways: OUTBOUND and INBOUND_REVERSE.
pub const BIDIRECTIONAL: u32 = OUTBOUND | INBOUND_REVERSE;
