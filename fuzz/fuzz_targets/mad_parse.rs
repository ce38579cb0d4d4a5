#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mad_codec::fuzzing::parse_mad(data));
