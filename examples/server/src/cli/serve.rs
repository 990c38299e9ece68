//! `docmeta serve`: the HTTP API.

use std::net::SocketAddr;

use docmeta_core::Docmeta;

use super::{AnyError, Data, open};

/// Serves until SIGINT or SIGTERM, creating the administrator on first start.
pub(super) fn run(data: &Data, bind: SocketAddr) -> Result<(), AnyError> {
    let db = open(data, true)?;
    ensure_admin(&db)?;
    server_runtime(db.config())?.block_on(crate::app::serve(db, bind))?;
    Ok(())
}

/// Blocking threads of the server for its reads and writes: each takes a reader connection,
/// and more threads than connections only add context switches (measured with
/// benches/http/load.sh).
const READ_THREADS: usize = 8;

/// The runtime of `serve` (and of the benchmark's floor, which must match it): its blocking
/// threads are [`READ_THREADS`] and one per template render that may run at once
/// (`renders_at_once`): a render holds no reader connection (it runs between transactions) but
/// does hold its thread, so renders, however slow, never take the threads reads need (96
/// requests looping a 2 s lookup once made `health` wait 23.7 s behind them).
pub(super) fn server_runtime(
    config: &docmeta_core::Config,
) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(READ_THREADS + config.renders_at_once.max(1))
        .build()
}

/// Creates the administrator on first start (no user yet).
pub(super) fn ensure_admin(db: &Docmeta) -> Result<(), AnyError> {
    let s = db.system();
    if !s.users()?.is_empty() {
        return Ok(());
    }
    let username = std::env::var("DOCMETA_ADMIN_USER").unwrap_or_else(|_| "admin".into());
    let (password, generated) = match std::env::var("DOCMETA_ADMIN_PASSWORD") {
        Ok(p) => (p, false),
        Err(_) => (generated_password()?, true),
    };
    s.create_user(&username, &password, true)?;
    if generated {
        println!(
            "created administrator '{username}' with password: {password}\n(shown once; change it with `docmeta user set-password {username}`)"
        );
    } else {
        println!("created administrator '{username}'");
    }
    Ok(())
}

fn generated_password() -> Result<String, AnyError> {
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes).map_err(|e| e.to_string())?;
    Ok(base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        bytes,
    ))
}
