//! `docmeta`: the HTTP server of docmeta and its operational commands (spec 4.6, 8).

mod answers;
mod app;
mod auth;
mod body;
mod cli;
mod clock;
mod conn;
mod demo;
mod dto;
mod error;
mod page;
mod requests;
mod routes;
mod state;
mod streams;
mod ui;

use std::process::ExitCode;

use cli::{Cli, Parser};

/// mimalloc instead of glibc's allocator: a request allocates and frees many small buffers
/// (rows, records, JSON), and glibc's `malloc`/`free`/`malloc_consolidate` took about 12% of a
/// metadata GET's samples (benches/README.md, "Every scenario profiled").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Everything this process writes holds secrets or documents (the data directory's database,
    // index files, spooled uploads; backups): owner-only, whatever umask it was started with. The
    // library sets the modes of what it creates and leaves the umask to its host; this binary
    // is its own host, so files other code creates here (tantivy's) are 0600 too.
    #[cfg(unix)]
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    // Log lines are written by a background thread, so a slow terminal or disk never adds to a
    // request's latency; not lossy: under pressure requests wait rather than lines being lost.
    let (writer, _flush_on_exit) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .finish(std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DOCMETA_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_target(false)
        .with_writer(writer)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match cli::run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        // Work that needs the data directory alone, while another process has it open: one
        // line naming that process, and nothing changed.
        Err(e) => match e.downcast_ref::<docmeta_core::Error>() {
            Some(docmeta_core::Error::Conflict { field, message })
                if field == docmeta_core::DATA_DIRECTORY_IN_USE =>
            {
                eprintln!("error: {message}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
