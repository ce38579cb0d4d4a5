#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| local_sa::agent::fuzzing::drive(data));
