//! Where `SaCore` routes events to its groups and carries out what they
//! decide: one file per group whose effects reach beyond it.

mod queries;
mod registrations;
mod tables;
