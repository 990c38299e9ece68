//! Replays the fuzz targets' seed corpora (`fuzz/corpus/<target>/`) and the inputs of every crash
//! the fuzzers found (`fuzz/regressions/<target>/`) through the same target bodies, so a fixed
//! crash stays fixed without a fuzzer installed. `scripts/fuzz` runs the fuzzers themselves.

use std::path::Path;

#[test]
fn seed_and_regression_inputs_pass_every_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut replayed = 0;
    for (name, target) in docmeta_fuzz_harness::TARGETS {
        let mut inputs = 0;
        for dir in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(name)) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("a directory entry").path();
                let data = std::fs::read(&path).expect("an input");
                let outcome = std::panic::catch_unwind(|| target(&data));
                assert!(outcome.is_ok(), "{name} fails on {}", path.display());
                inputs += 1;
            }
        }
        assert!(inputs > 0, "no seed input for the fuzz target {name}");
        replayed += inputs;
    }
    println!("replayed {replayed} inputs");
}
