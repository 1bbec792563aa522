#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    delta_rlc_protocol::fuzzing::log_listing(data);
});
