#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mad_codec::fuzzing::walk_records(data));
