//! The core against a fake master SA on a virtual clock: every behaviour a
//! client or the master would notice, without a fabric.

mod acm_ports;
mod answers;
mod bench;
mod cache_control;
mod doubt;
mod fake_master;
mod forwarding;
mod kept;
mod loads;
mod multicast;
mod name_loads;
mod names;
mod notices;
mod outlook;
mod partitions;
mod population;
mod qos_cache;
mod qos_loads;
mod registration_limits;
mod registration_pace;
mod registrations_record;
mod sa_class;
mod subscriptions;
mod transfer_limits;
mod upkeep;
