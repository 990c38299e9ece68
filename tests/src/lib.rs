//! End-to-end tests of docmeta live in `tests/`.
