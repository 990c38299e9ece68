//! The HTTP black-box tests on PostgreSQL: each test's server runs on a fresh
//! database at `DOCMETA_TEST_POSTGRES_URL`; without it they say why they are skipped.

const ON_POSTGRES: bool = true;

include!("suite/http.rs");
