//! The command line: its definitions (the help text comes from the doc comments here) and the
//! dispatch to one module per command.

mod audit;
mod backup;
mod bench;
mod demo;
mod migrate;
mod restore;
mod schema;
mod search;
mod serve;
mod storage;
mod user;
mod webhook;

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Subcommand;
use docmeta_core::Docmeta;

pub use clap::Parser;

#[derive(Parser)]
#[command(
    name = "docmeta",
    version,
    about = "Metadata, access control and operations of a document-management system"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
pub(crate) struct Data {
    /// The data directory (MEDIA_ROOT); created when missing.
    #[arg(long, env = "DOCMETA_DATA", default_value = "./docmeta-data")]
    pub(crate) data: PathBuf,
    /// A PostgreSQL database instead of the data directory's SQLite file
    /// (`postgres://user:password@host:port/database`); files and the search index stay in the
    /// data directory.
    #[arg(long, env = "DOCMETA_DATABASE_URL")]
    pub(crate) database_url: Option<String>,
    /// Document files in an S3-compatible bucket (`s3://bucket/prefix`) instead of where
    /// config.yml's documents_file_storage_location says (by default the data directory's
    /// document_file_storage/). Credentials, endpoint and region come from AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_DEFAULT_REGION (AWS_ALLOW_HTTP=true for an
    /// http:// endpoint).
    #[arg(long, env = "DOCMETA_FILE_STORAGE")]
    pub(crate) file_storage: Option<String>,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
    /// Inspect webhooks and their deliveries, and retry a delivery (as docmeta itself: every
    /// user's webhooks). Safe beside a running server, whose deliverer sends a retried delivery.
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
    /// Convert the document file storage between plain and encrypted (MENC; needs the
    /// encrypted backend configured and its password, DOCMETA_STORAGE_PASSWORD; resumable), or
    /// verify every stored file.
    Storage {
        #[command(subcommand)]
        command: StorageCommand,
    },
    /// The tamper-evident event log: verify its hash chain and signed checkpoints, write a
    /// checkpoint to keep elsewhere, print the public key that checks them, prune old events.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

#[derive(Subcommand)]
pub(crate) enum AuditCommand {
    /// Walk the whole event log: every event's hash, the positions without a gap, every stored
    /// checkpoint (and `--checkpoint FILE`); names the first event that fails and exits 1.
    /// Reads only on SQLite (on PostgreSQL, seals what has committed first): safe beside a
    /// running server.
    Verify {
        #[command(flatten)]
        data: Data,
        /// A checkpoint kept outside the database (from `docmeta audit checkpoint`): events
        /// removed from the end of the log, or a log rewritten, are found against it.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
    },
    /// Write a signed checkpoint of the log's end (JSON, on standard output): keep it outside
    /// the installation to verify against later.
    Checkpoint {
        #[command(flatten)]
        data: Data,
    },
    /// Print the installation's Ed25519 public key (hex), which checkpoints are signed with.
    PublicKey {
        #[command(flatten)]
        data: Data,
    },
    /// Remove the events written before a time, keeping a signed checkpoint so that the rest
    /// still verifies (the log is verified first; a log that fails is not pruned).
    Prune {
        #[command(flatten)]
        data: Data,
        /// RFC 3339, e.g. `2025-01-01T00:00:00Z`.
        #[arg(long)]
        before: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum BackupCommand {
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
pub(crate) enum StorageCommand {
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
pub(crate) enum WebhookCommand {
    /// List every webhook: id, owner, whether active, the events it is for, its URL.
    List {
        #[command(flatten)]
        data: Data,
    },
    /// List a webhook's deliveries, pending first, then the most recent.
    Deliveries {
        #[command(flatten)]
        data: Data,
        /// The webhook.
        webhook: i64,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Make a pending or failed delivery due now.
    Retry {
        #[command(flatten)]
        data: Data,
        /// The webhook.
        webhook: i64,
        /// The delivery.
        delivery: i64,
    },
}

#[derive(Subcommand)]
pub(crate) enum UserCommand {
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
pub(crate) struct Wait {
    /// When another process (a running `docmeta serve`) holds the index writer, the work is
    /// queued as a task it runs: return at once instead of waiting for it.
    #[arg(long)]
    pub(crate) no_wait: bool,
}

#[derive(Subcommand)]
pub(crate) enum SearchCommand {
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

#[derive(Subcommand)]
pub(crate) enum SchemaCommand {
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

pub(crate) type AnyError = Box<dyn std::error::Error>;

pub(crate) fn open(data: &Data, worker: bool) -> Result<Docmeta, AnyError> {
    open_with(data, Docmeta::builder().worker(worker))
}

pub(crate) fn open_with(data: &Data, builder: docmeta_core::Builder) -> Result<Docmeta, AnyError> {
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

/// Progress of long work: a bar with rate and ETA on a terminal, plain lines otherwise.
pub(crate) fn progress(what: &'static str) -> impl FnMut(usize, usize) {
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

/// Runs the command `cli` names.
pub fn run(cli: Cli) -> Result<(), AnyError> {
    match cli.command {
        Command::Serve { data, bind } => serve::run(&data, bind),
        Command::BenchFloor { bind, body_bytes } => bench::floor(bind, body_bytes),
        Command::BenchData { data, documents } => bench::data(&data, documents),
        Command::Migrate { data, check } => migrate::run(&data, check),
        Command::User { command } => user::run(command),
        Command::Schema { command } => schema::run(command),
        Command::Search { command } => search::run(command),
        Command::Demo { data } => demo::run(&data),
        Command::Backup {
            command,
            data,
            out,
            since,
        } => backup::run(command, &data, out, since),
        Command::Restore { files, data } => restore::run(&files, &data),
        Command::Storage { command } => storage::run(command),
        Command::Webhook { command } => webhook::run(command),
        Command::Audit { command } => audit::run(command),
    }
}
