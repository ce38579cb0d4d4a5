//! Where `SaCore` routes events to its groups and carries out what they
//! decide: one file per group whose effects reach beyond it — `tables`
//! (the port's tables), `queries` (queries and every request to the
//! master, with its answer), `registrations` (the registration proxy),
//! `names` (the names tables: loaded, fetched).

mod names;
mod queries;
mod registrations;
mod tables;
