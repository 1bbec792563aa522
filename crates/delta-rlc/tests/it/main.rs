//! The library's integration tests, one test binary: each file is a module, so the test command
//! compiles and links the library's whole dependency tree once instead of once per file.

mod admin;
mod api;
mod metadata_pairs;
mod nested_writes;
mod reexecution;
mod refusals;
mod request_cost;
