//! The hidden commands of the HTTP benchmark (`benches/http/load.sh`): its floor server and
//! its data.

use std::net::SocketAddr;

use super::serve::server_runtime;
use super::{AnyError, Data, open};

/// `docmeta bench-floor`: the server's runtime, listener, middleware and logging, answering
/// every request with a constant JSON body of `body_bytes` bytes.
pub(super) fn floor(bind: SocketAddr, body_bytes: usize) -> Result<(), AnyError> {
    let config = docmeta_core::Config::default();
    server_runtime(&config)?.block_on(crate::app::serve_floor(&config, bind, body_bytes))?;
    Ok(())
}

/// `docmeta bench-data`: adds `documents` generated documents to the demo, and indexes them.
pub(super) fn data(data: &Data, documents: usize) -> Result<(), AnyError> {
    let db = open(data, false)?;
    crate::demo::bench_data(&db, documents)?;
    db.run_pending_tasks()?;
    crate::demo::bench_index(&db)?;
    Ok(())
}
