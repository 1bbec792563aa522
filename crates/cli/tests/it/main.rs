//! The CLI's integration tests, one test binary: each file is a module, so the test command
//! compiles and links the engine's dependency tree once instead of once per file.

mod common;
mod exit_codes;
mod output_formats;
mod scripts;
mod writer_model;
