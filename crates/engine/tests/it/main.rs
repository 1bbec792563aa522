//! Integration tests for the engine (one binary: faster links).

mod common;
mod golden;
mod malformed;
mod pruning;
mod write;
