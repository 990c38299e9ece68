#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| docmeta_fuzz_harness::pipeline(data));
