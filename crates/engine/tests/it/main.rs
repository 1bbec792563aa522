//! Integration tests for the engine (one binary: faster links).

mod common;
mod dml_model;
mod golden;
mod malformed;
mod pruning;
mod write;
