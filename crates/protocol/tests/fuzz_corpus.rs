//! Replays the fuzz corpora (fuzz/corpus/<target>/*) and the golden tables' log and DV files through
//! the fuzz entry points on stable Rust: none may panic.

use std::path::{Path, PathBuf};

use delta_rlc_protocol::fuzzing;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn corpora_replay_without_panics() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let targets: [(&str, fn(&[u8])); 6] = [
        ("dv_decode", fuzzing::dv_decode),
        ("commit_json", fuzzing::commit_json),
        ("stats_json", fuzzing::stats_json),
        ("partition_value", fuzzing::partition_value),
        ("path_resolve", fuzzing::path_resolve),
        ("log_listing", fuzzing::log_listing),
    ];
    let mut n = 0;
    for (name, f) in targets {
        let mut inputs = Vec::new();
        files(&root.join(name), &mut inputs);
        assert!(!inputs.is_empty(), "corpus for {name} is empty");
        for p in inputs {
            f(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    // The golden tables' real log and DV files (read in place, never copied).
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden");
    let mut all = Vec::new();
    files(&golden, &mut all);
    for p in all {
        let bytes = std::fs::read(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".json") {
            fuzzing::commit_json(&bytes);
        } else if name.starts_with("deletion_vector_") {
            fuzzing::dv_decode(&bytes);
        }
        fuzzing::log_listing(name.as_bytes());
        n += 1;
    }
    assert!(n > 20);
}
