//! The SA agent's logic, without I/O: what to answer and what to send.

pub mod path_query;
