//! The simulator's integration tests, one module per part of the model, each test stating a
//! claim and the bound it follows from. One binary: linking twelve cost the build minutes.

mod common;

mod atlas;
mod determinism;
mod ecn;
mod fabric;
mod host_cpu;
mod incast;
mod lossless;
mod physics;
mod pipe;
mod rc;
mod roi;
mod subfarm;

/// With `autotests = false` a new file in `tests/` would never run: each must be a module here.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap();
        if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
            assert!(main.contains(&format!("\nmod {stem};\n")), "tests/{stem}.rs is not a module of tests/main.rs");
        }
    }
}
