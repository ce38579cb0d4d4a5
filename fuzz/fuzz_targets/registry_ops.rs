#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| informinfo::fuzzing::registry_ops(data));
