//! The HTTP black-box tests on the embedded SQLite store.

const ON_POSTGRES: bool = false;

include!("suite/http.rs");
