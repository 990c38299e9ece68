//! `docmeta`: the HTTP server of docmeta and its operational commands (spec 4.6, 8).

mod answers;
mod app;
mod auth;
mod body;
mod clock;
mod conn;
mod demo;
mod dto;
mod error;
mod page;
mod routes;
mod state;
mod streams;

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use docmeta_core::installation::{Schema, apply, export};
use docmeta_core::search::{SearchWork, SearchWorkRun, SearchWorkState};
use docmeta_core::{Docmeta, UserUpdate};

#[derive(Parser)]
#[command(
    name = "docmeta",
    version,
    about = "Metadata, access control and operations of a document-management system"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Data {
    /// The data directory (MEDIA_ROOT); created when missing.
    #[arg(long, env = "DOCMETA_DATA", default_value = "./docmeta-data")]
    data: PathBuf,
    /// A PostgreSQL database instead of the data directory's SQLite file
    /// (`postgres://user:password@host:port/database`); files and the search index stay in the
    /// data directory.
    #[arg(long, env = "DOCMETA_DATABASE_URL")]
    database_url: Option<String>,
    /// Document files in an S3-compatible bucket (`s3://bucket/prefix`) instead of where
    /// config.yml's documents_file_storage_location says (by default the data directory's
    /// document_file_storage/). Credentials, endpoint and region come from AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_DEFAULT_REGION (AWS_ALLOW_HTTP=true for an
    /// http:// endpoint).
    #[arg(long, env = "DOCMETA_FILE_STORAGE")]
    file_storage: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API. On first start, creates the administrator from DOCMETA_ADMIN_USER /
    /// DOCMETA_ADMIN_PASSWORD (or prints a generated password once).
    Serve {
        #[command(flatten)]
        data: Data,
        /// Address to listen on (loopback unless told otherwise).
        #[arg(long, default_value = "127.0.0.1:8000")]
        bind: SocketAddr,
    },
    /// The floor of the HTTP benchmark (`benches/http/load.sh`): the server's runtime,
    /// listener, middleware and logging, answering every request with a constant JSON body.
    #[command(hide = true)]
    BenchFloor {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8001")]
        bind: SocketAddr,
        /// Size of the constant body, in bytes.
        #[arg(long, default_value_t = 1024)]
        body_bytes: usize,
    },
    /// Adds generated documents to the demo for the HTTP benchmark (`benches/http/load.sh`).
    #[command(hide = true)]
    BenchData {
        #[command(flatten)]
        data: Data,
        /// How many documents: alternately invoices (alice sees them) and contracts.
        #[arg(long, default_value_t = 1000)]
        documents: usize,
    },
    /// Apply pending database migrations.
    Migrate {
        #[command(flatten)]
        data: Data,
        /// Only report whether migrations are pending (exit 1 if so); changes nothing, and
        /// runs beside a live server.
        #[arg(long)]
        check: bool,
    },
    /// Manage users.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Export or apply the schema (metadata types, document types, roles) as YAML.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
    /// Operate the search index (spec 4.6).
    Search {
        #[command(subcommand)]
        command: SearchCommand,
    },
    /// Load a small realistic demo (invoices and contracts, users, roles, ACLs).
    Demo {
        #[command(flatten)]
        data: Data,
    },
    /// Back up the data directory into one archive (spec 8.1 item 3) while it stays in use:
    /// `docmeta backup --data DIR --out FILE [--since EARLIER]`, or verify / prune archives.
    #[command(args_conflicts_with_subcommands = true)]
    Backup {
        #[command(subcommand)]
        command: Option<BackupCommand>,
        #[command(flatten)]
        data: Data,
        /// The archive to write (`.tar.zst`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// An earlier backup: archive only the document files it lacks (incremental).
        #[arg(long)]
        since: Option<PathBuf>,
    },
    /// Restore backups into a data directory no docmeta has open (spec 8.1 item 4): one full
    /// backup, or an incremental one with the backups it builds on. The new directory is built,
    /// checked (checksums, database integrity and schema version) and opened beside the
    /// target, and replaces it only then: a restore that fails leaves the target as it was.
    Restore {
        /// The archives.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        data: Data,
    },
    /// Convert the document file storage between plain and encrypted (MENC; needs the
    /// encrypted backend configured and its password, DOCMETA_STORAGE_PASSWORD; resumable), or
    /// verify every stored file.
    Storage {
        #[command(subcommand)]
        command: StorageCommand,
    },
}

#[derive(Subcommand)]
enum BackupCommand {
    /// Check an archive (every path, size and SHA-256) without restoring it.
    Verify {
        /// The archive.
        file: PathBuf,
    },
    /// Delete old archives in a directory by a retention schedule (spec 8.1 item 8).
    Prune {
        /// The directory holding the archives.
        #[arg(long)]
        dir: PathBuf,
        /// Keep the newest backup of each of this many most recent days.
        #[arg(long, default_value_t = 30)]
        keep_daily: usize,
        /// Keep the newest backup of each of this many most recent weeks.
        #[arg(long, default_value_t = 12)]
        keep_weekly: usize,
        /// Only show what would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand)]
enum StorageCommand {
    /// Encrypt every plain document file.
    Encrypt {
        #[command(flatten)]
        data: Data,
    },
    /// Decrypt every encrypted document file (then set the backend to plain).
    Decrypt {
        #[command(flatten)]
        data: Data,
    },
    /// Read every stored document file and check it against its record (present, size,
    /// SHA-256, every MENC chunk's tag); lists the damaged ones and exits 1 if there are any.
    /// Reads only: safe beside a running server.
    Verify {
        #[command(flatten)]
        data: Data,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create a user; the password comes from DOCMETA_PASSWORD or standard input.
    Create {
        #[command(flatten)]
        data: Data,
        username: String,
        #[arg(long)]
        superuser: bool,
    },
    /// Set a user's password (from DOCMETA_PASSWORD or standard input).
    SetPassword {
        #[command(flatten)]
        data: Data,
        username: String,
    },
}

/// How a search command that writes the index waits when a running server does the work.
#[derive(clap::Args, Clone, Copy)]
struct Wait {
    /// When another process (a running `docmeta serve`) holds the index writer, the work is
    /// queued as a task it runs: return at once instead of waiting for it.
    #[arg(long)]
    no_wait: bool,
}

#[derive(Subcommand)]
enum SearchCommand {
    /// Rebuild the whole index from the database (into a fresh index, swapped in when done).
    Reindex {
        #[command(flatten)]
        data: Data,
        #[command(flatten)]
        wait: Wait,
    },
    /// Show counts per model, index size, how far behind the event log it is, and whether its
    /// schema is current.
    Status {
        #[command(flatten)]
        data: Data,
    },
    /// Recreate the index empty with the current schema (then run `reindex`).
    Initialize {
        #[command(flatten)]
        data: Data,
        #[command(flatten)]
        wait: Wait,
    },
    /// Rebuild the index if an older docmeta built it.
    Upgrade {
        #[command(flatten)]
        data: Data,
        #[command(flatten)]
        wait: Wait,
    },
    /// Index the objects of one model: documents.document or metadata.documentmetadata.
    IndexObjects {
        #[command(flatten)]
        data: Data,
        #[command(flatten)]
        wait: Wait,
        #[arg(long)]
        model: String,
        /// Only these ids, e.g. `1-10,15`.
        #[arg(long)]
        ids: Option<String>,
    },
}

/// Parses `1-10,15` into ids.
fn parse_ids(text: &str) -> Result<Vec<i64>, AnyError> {
    let mut ids = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (i64, i64) = (a.trim().parse()?, b.trim().parse()?);
                if b < a || b - a > 10_000_000 {
                    return Err(format!("bad id range '{part}'").into());
                }
                ids.extend(a..=b);
            }
            None => ids.push(part.parse()?),
        }
    }
    Ok(ids)
}

/// Progress of long work: a bar with rate and ETA on a terminal, plain lines otherwise.
fn progress(what: &'static str) -> impl FnMut(usize, usize) {
    use std::io::IsTerminal;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:40}] {pos}/{len} {per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(what);
        bar
    });
    let started = std::time::Instant::now();
    let mut last_line = std::time::Instant::now();
    move |done, total| match &bar {
        Some(bar) => {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            if done == total {
                bar.finish();
            }
        }
        None if done == total || last_line.elapsed() >= std::time::Duration::from_secs(2) => {
            last_line = std::time::Instant::now();
            let rate = done as f64 / started.elapsed().as_secs_f64().max(0.001);
            eprintln!("{what}: {done}/{total} ({rate:.0}/s)");
        }
        None => {}
    }
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// Print the schema as YAML.
    Export {
        #[command(flatten)]
        data: Data,
    },
    /// Make the database match a schema file, in one transaction; prints the changes.
    Apply {
        #[command(flatten)]
        data: Data,
        file: PathBuf,
        /// Show the changes without making them.
        #[arg(long)]
        dry_run: bool,
    },
}

/// mimalloc instead of glibc's allocator: a request allocates and frees many small buffers
/// (rows, records, JSON), and glibc's `malloc`/`free`/`malloc_consolidate` took about 12% of a
/// metadata GET's samples (benches/README.md, "Every scenario profiled").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Blocking threads of the server for its reads and writes: each takes a reader connection,
/// and more threads than connections only add context switches (measured with
/// benches/http/load.sh).
const READ_THREADS: usize = 8;

/// The runtime of `serve` (and of the benchmark's floor, which must match it): its blocking
/// threads are [`READ_THREADS`] and one per template render that may run at once
/// (`renders_at_once`): a render holds no reader connection (it runs between transactions) but
/// does hold its thread, so renders, however slow, never take the threads reads need (issue
/// #32: 96 requests looping a 2 s lookup made `health` wait 23.7 s behind them).
fn server_runtime(config: &docmeta_core::Config) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(READ_THREADS + config.renders_at_once.max(1))
        .build()
}

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
    match run(Cli::parse()) {
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

type AnyError = Box<dyn std::error::Error>;

fn open(data: &Data, worker: bool) -> Result<Docmeta, AnyError> {
    open_with(data, Docmeta::builder().worker(worker))
}

fn open_with(data: &Data, builder: docmeta_core::Builder) -> Result<Docmeta, AnyError> {
    let builder = builder.data_dir(&data.data);
    let builder = match &data.file_storage {
        Some(location) => builder.file_storage_location(location),
        None => builder,
    };
    Ok(match &data.database_url {
        Some(url) => builder.postgres(url).open()?,
        None => builder.open()?,
    })
}

fn password_input(prompt: &str) -> Result<String, AnyError> {
    if let Ok(p) = std::env::var("DOCMETA_PASSWORD") {
        return Ok(p);
    }
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

fn generated_password() -> Result<String, AnyError> {
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes).map_err(|e| e.to_string())?;
    Ok(base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        bytes,
    ))
}

/// Creates the administrator on first start (no user yet).
fn ensure_admin(db: &Docmeta) -> Result<(), AnyError> {
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

/// Runs search work here, or hands it to the process holding the index writer and (unless
/// `--no-wait`) follows it with the same progress display. `Some(n)`: finished, `n` documents.
fn search_work(
    db: &Docmeta,
    work: &SearchWork,
    what: &'static str,
    wait: Wait,
) -> Result<Option<usize>, AnyError> {
    let mut shown = progress(what);
    let ticket = match db.search_work(work, &mut shown)? {
        SearchWorkRun::Done(n) => return Ok(Some(n)),
        SearchWorkRun::HandedOff(ticket) => ticket,
    };
    let task = ticket.task;
    let holder = db.search_writer_pid().map_or_else(
        || "another process".to_owned(),
        |pid| format!("process {pid}"),
    );
    eprintln!(
        "{holder} (a running `docmeta serve`) holds the search index writer: queued as task \
         {task} for it"
    );
    if wait.no_wait {
        println!("queued as task {task}; the server runs it (GET /api/v4/tasks/ lists it)");
        return Ok(None);
    }
    let mut seen = (0, 0);
    loop {
        match db.search_work_state(&ticket)? {
            SearchWorkState::Done(indexed) => {
                let n = indexed.unwrap_or(seen.1);
                if seen != (n, n) {
                    shown(n, n);
                }
                return Ok(Some(n));
            }
            SearchWorkState::Failed(e) => return Err(format!("task {task} failed: {e}").into()),
            SearchWorkState::Running { done, total } if total > 0 && (done, total) != seen => {
                seen = (done, total);
                shown(done, total);
            }
            SearchWorkState::Running { .. } | SearchWorkState::Pending { .. } => {}
        }
        // The server stopped before running it: this command now holds the writer.
        if let Some(n) = db.adopt_search_work(&ticket, &mut shown)? {
            eprintln!("the process holding the search index writer stopped: ran task {task} here");
            return Ok(Some(n));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

fn search(command: SearchCommand) -> Result<(), AnyError> {
    match command {
        SearchCommand::Reindex { data, wait } => {
            let db = open(&data, false)?;
            let started = std::time::Instant::now();
            let Some(n) = search_work(&db, &SearchWork::Reindex, "reindex", wait)? else {
                return Ok(());
            };
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "indexed {n} documents in {seconds:.1} s ({:.0} documents per minute)",
                n as f64 * 60.0 / seconds.max(0.001)
            );
        }
        SearchCommand::Status { data } => {
            let db = open(&data, false)?;
            let s = db.search_status()?;
            println!("documents.document: {}", s.documents);
            println!("metadata.documentmetadata: {}", s.metadata_values);
            println!("size: {} bytes", s.size_bytes);
            println!("events not yet indexed: {}", s.events_behind);
            let verdict = if s.schema_current {
                "current"
            } else {
                "outdated: run `docmeta search upgrade`"
            };
            println!("schema version: {} ({verdict})", s.schema_version);
        }
        SearchCommand::Initialize { data, wait } => {
            let db = open(&data, false)?;
            if search_work(&db, &SearchWork::Initialize, "initialize", wait)?.is_some() {
                println!("search index recreated empty; run `docmeta search reindex` to fill it");
            }
        }
        SearchCommand::Upgrade { data, wait } => {
            let db = open(&data, false)?;
            if db.search_status()?.schema_current {
                println!("search index is current");
            } else if search_work(&db, &SearchWork::Upgrade, "upgrade", wait)?.is_some() {
                println!("search index rebuilt with the current schema");
            }
        }
        SearchCommand::IndexObjects {
            data,
            wait,
            model,
            ids,
        } => {
            let db = open(&data, false)?;
            let ids = ids.as_deref().map(parse_ids).transpose()?;
            let work = SearchWork::IndexObjects { model, ids };
            if let Some(n) = search_work(&db, &work, "index-objects", wait)? {
                println!("indexed {n} documents");
            }
        }
    }
    Ok(())
}

fn backup(
    command: Option<BackupCommand>,
    data: Data,
    out: Option<PathBuf>,
    since: Option<PathBuf>,
) -> Result<(), AnyError> {
    match command {
        None => {
            let out = out.ok_or("give --out FILE (the archive to write)")?;
            let db = open(&data, false)?;
            let started = std::time::Instant::now();
            let mut shown = progress("backup");
            let r = db.backup(&out, since.as_deref(), |done, total| {
                shown(done as usize, total as usize)
            })?;
            println!(
                "wrote {} ({} bytes, {} document files{}) in {:.1} s",
                r.path.display(),
                r.archive_bytes,
                r.files_archived,
                match &r.manifest.info.base {
                    Some(base) => format!(", incremental on backup {base}"),
                    None => String::new(),
                },
                started.elapsed().as_secs_f64()
            );
            println!("backup id {}", r.manifest.info.id);
            if !r.manifest.is_intact() {
                print_damaged(&r.manifest.damaged);
                return Err(format!(
                    "the backup was written, but {} document files could not be read intact \
                     (listed above and in its manifest); run `docmeta storage verify`",
                    r.manifest.damaged.len()
                )
                .into());
            }
        }
        Some(BackupCommand::Verify { file }) => {
            let m = docmeta_core::backup::verify_backup(&file)?;
            println!(
                "{}: backup {} of {} (schema version {}): {} files, every checksum matches{}",
                file.display(),
                m.info.id,
                m.info.created.to_rfc3339(),
                m.info.schema_version,
                m.files.len(),
                match &m.info.base {
                    Some(b) => format!("; restore it with its base backup {b}"),
                    None => String::new(),
                }
            );
            if !m.is_intact() {
                print_damaged(&m.damaged);
                return Err(format!(
                    "{} document files were damaged when this backup was made",
                    m.damaged.len()
                )
                .into());
            }
        }
        Some(BackupCommand::Prune {
            dir,
            keep_daily,
            keep_weekly,
            dry_run,
        }) => {
            let decisions =
                docmeta_core::backup::prune_backups(&dir, keep_daily, keep_weekly, dry_run)?;
            for d in &decisions {
                match &d.kept_because {
                    Some(why) => println!("keep   {} ({why})", d.path.display()),
                    None if dry_run => println!("would delete {}", d.path.display()),
                    None => println!("delete {}", d.path.display()),
                }
            }
        }
    }
    Ok(())
}

/// `docmeta storage verify`: one line per damaged file on standard output, then a summary;
/// an error (exit status 1) when any file is damaged.
fn verify_storage(data: &Data) -> Result<(), AnyError> {
    let db = open(data, false)?;
    let mut shown = progress("verify");
    let r = db.verify_storage(|done, total| shown(done as usize, total as usize))?;
    for d in &r.damaged {
        println!(
            "DAMAGED document file {} (document {}, {:?}, stored as {}{}): {}",
            d.file_id,
            d.document_id,
            d.filename,
            d.storage_name,
            if d.encrypted { ", MENC" } else { "" },
            d.damage
        );
    }
    println!(
        "checked {} document files ({} bytes): {}",
        r.files_checked,
        r.bytes_checked,
        if r.is_intact() {
            "all intact".to_owned()
        } else {
            format!("{} damaged", r.damaged.len())
        }
    );
    if r.is_intact() {
        Ok(())
    } else {
        Err(format!(
            "{} damaged document files; restore them from a backup that holds them intact",
            r.damaged.len()
        )
        .into())
    }
}

/// One line per document file a backup found damaged.
fn print_damaged(damaged: &[docmeta_core::DamagedEntry]) {
    for d in damaged {
        match d.document_file_id {
            Some(id) => println!("DAMAGED document file {id} ({}): {}", d.path, d.damage),
            None => println!("DAMAGED {}: {}", d.path, d.damage),
        }
    }
}

fn run(cli: Cli) -> Result<(), AnyError> {
    match cli.command {
        Command::Backup {
            command,
            data,
            out,
            since,
        } => backup(command, data, out, since)?,
        Command::Restore { files, data } => {
            let password = std::env::var(docmeta_core::PASSWORD_VARIABLE).ok();
            let r = docmeta_core::backup::restore_to_storage(
                &files,
                &data.data,
                password.as_deref().map(str::as_bytes),
                data.database_url.as_deref(),
                data.file_storage.as_deref(),
            )?;
            println!(
                "restored backup {} of {} into {} ({} files)",
                r.manifest.info.id,
                r.manifest.info.created.to_rfc3339(),
                data.data.display(),
                r.files_restored
            );
            if !r.migrations.is_empty() {
                println!("migrations applied: {:?}", r.migrations);
            }
            println!("verification:");
            println!("  documents: {}", r.documents);
            match &r.document_opened {
                Some((id, label)) => println!("  document {id} opens: {label:?}"),
                None => println!("  no document to open"),
            }
            match &r.file_checked {
                Some((id, size)) => {
                    println!(
                        "  document file {id} downloads ({size} bytes) and matches its SHA-256"
                    )
                }
                None => println!("  no document file to download"),
            }
            println!(
                "  search answers: {}",
                if r.search_answers { "yes" } else { "NO" }
            );
            if !r.manifest.is_intact() {
                println!(
                    "  {} document files were damaged when the backup was made (restored as \
                     they were archived, not intact):",
                    r.manifest.damaged.len()
                );
                print_damaged(&r.manifest.damaged);
            }
            println!(
                "search rebuild queued as task {} (runs when `docmeta serve` starts; or run \
                 `docmeta search reindex`)",
                r.reindex_task
            );
        }
        Command::Storage { command } => {
            let (data, encrypt) = match command {
                StorageCommand::Encrypt { data } => (data, true),
                StorageCommand::Decrypt { data } => (data, false),
                StorageCommand::Verify { data } => return verify_storage(&data),
            };
            // Alone: files are renamed under a server that may be serving them.
            let db = open_with(&data, Docmeta::builder().exclusive(true))?;
            let mut shown = progress("convert");
            let n =
                db.convert_storage(encrypt, |done, total| shown(done as usize, total as usize))?;
            println!(
                "{} {n} document files",
                if encrypt { "encrypted" } else { "decrypted" }
            );
            if !encrypt {
                println!("set documents_file_storage_backend: plain in config.yml");
            }
        }
        Command::Serve { data, bind } => {
            let db = open(&data, true)?;
            ensure_admin(&db)?;
            server_runtime(db.config())?.block_on(app::serve(db, bind))?;
        }
        Command::BenchData { data, documents } => {
            let db = open(&data, false)?;
            demo::bench_data(&db, documents)?;
            db.run_pending_tasks()?;
            demo::bench_index(&db)?;
        }
        Command::BenchFloor { bind, body_bytes } => {
            let config = docmeta_core::Config::default();
            server_runtime(&config)?.block_on(app::serve_floor(&config, bind, body_bytes))?;
        }
        Command::Migrate { data, check: true } => {
            let builder = Docmeta::builder().data_dir(&data.data);
            let builder = match &data.database_url {
                Some(url) => builder.postgres(url),
                None => builder,
            };
            let (version, newest) = builder.schema_version()?;
            if version >= newest {
                println!("database is current (schema version {version})");
            } else {
                println!(
                    "migrations {}..={newest} are pending (schema version {version}); run \
                     `docmeta migrate`",
                    version + 1
                );
                return Err("migrations are pending".into());
            }
        }
        Command::Migrate { data, check: false } => {
            let db = open(&data, false)?;
            let applied = db.migrate()?;
            let (version, _) = db.store().schema_version()?;
            if applied.is_empty() {
                println!("database is current (schema version {version})");
            } else {
                println!("applied migrations {applied:?}; schema version {version}");
            }
        }
        Command::User {
            command:
                UserCommand::Create {
                    data,
                    username,
                    superuser,
                },
        } => {
            let db = open(&data, false)?;
            let password = password_input("password: ")?;
            let user = db.system().create_user(&username, &password, superuser)?;
            println!("created user '{}' (id {})", user.username, user.id);
        }
        Command::User {
            command: UserCommand::SetPassword { data, username },
        } => {
            let db = open(&data, false)?;
            let s = db.system();
            let user = s
                .users()?
                .into_iter()
                .find(|u| u.username == username)
                .ok_or_else(|| format!("no user '{username}'"))?;
            let password = password_input("new password: ")?;
            s.update_user(
                user.id,
                UserUpdate {
                    password: Some(password),
                    is_active: Some(true),
                    ..Default::default()
                },
            )?;
            println!("password of '{username}' changed");
        }
        Command::Schema {
            command: SchemaCommand::Export { data },
        } => {
            let db = open(&data, false)?;
            print!("{}", export(&db)?.to_yaml()?);
        }
        Command::Schema {
            command:
                SchemaCommand::Apply {
                    data,
                    file,
                    dry_run,
                },
        } => {
            let db = open(&data, false)?;
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("reading {}: {e}", file.display()))?;
            let schema = Schema::from_yaml(&text)?;
            let changes = apply(&db, &schema, dry_run)?;
            for c in &changes {
                println!("{c}");
            }
            let verb = if dry_run { "would make" } else { "made" };
            println!("{verb} {} change(s)", changes.len());
            if !dry_run {
                db.run_pending_tasks()?;
            }
        }
        Command::Search { command } => search(command)?,
        Command::Demo { data } => {
            let db = open(&data, false)?;
            ensure_admin(&db)?;
            demo::load(&db)?;
            db.run_pending_tasks()?;
        }
    }
    Ok(())
}
