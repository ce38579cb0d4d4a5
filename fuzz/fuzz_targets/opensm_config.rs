#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| local_sa_core::fuzzing::opensm_config(data));
