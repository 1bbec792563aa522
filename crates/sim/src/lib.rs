//! Proof that nothing is lost: the serial-replay oracle, the deterministic simulator and the
//! exhaustive small-scope explorer. Seeds come from `DELTA_SIM_SEED` / `DELTA_SIM_SEEDS`.

pub mod added_values;
pub mod change_feed;
pub mod exhaustive;
pub mod identity_check;
pub mod metadata_check;
pub mod model;
pub mod oracle;
pub mod sim;
pub mod values;
