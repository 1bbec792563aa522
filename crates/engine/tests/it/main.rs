//! Integration tests for the engine (one binary: faster links).

mod alter;
mod change_data;
mod clustering;
mod column_mapping;
mod common;
mod compaction_tags;
mod constraints;
mod dml_edge;
mod dml_model;
mod faults;
mod golden;
mod identity;
mod layers;
mod malformed;
mod merge_memory;
mod pruning;
mod readers;
mod reads_never_write;
mod scenarios;
mod snapshot_update;
mod spark_semantics;
mod statements;
mod tier_soundness;
mod time_travel;
mod vacuum_soak;
mod write;
