#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| geode_fuzz::codex_cli::run(data));
