//! Criterion benchmarks of docmeta live in `benches/`.
