//! Issue #15: see security.rs.
