#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| geode_fuzz::tape::run(data));
