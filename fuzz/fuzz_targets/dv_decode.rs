#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    delta_rlc_protocol::fuzzing::dv_decode(data);
});
