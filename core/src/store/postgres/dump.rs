//! Backups and restores with PostgreSQL's own tools: `pg_dump` of one consistent snapshot,
//! `pg_restore`, and the check of a dump before a restore loads it.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::path::Path;

use super::errors::pg_error;
use super::{PostgresStore, redact};
use crate::error::{Error, Result};
use crate::store::{DatabaseDump, SCHEMA_VERSION};

/// `pg_dump -Fc` of the database in the exact state from which the file list is read: a
/// repeatable-read transaction exports its snapshot and `pg_dump --snapshot` uses it.
pub(super) fn dump_for_backup(store: &PostgresStore, path: &Path) -> Result<DatabaseDump> {
    let mut pooled = store.client()?;
    let result = (|| {
        let c = &mut pooled.client;
        c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .map_err(|e| pg_error("starting the backup snapshot", e))?;
        let snapshot: String = c
            .query("SELECT pg_export_snapshot()")
            .map_err(|e| pg_error("exporting the backup snapshot", e))?
            .first()
            .and_then(|r| r.get(0))
            .ok_or_else(|| Error::storage("exporting the backup snapshot", "no snapshot"))?;
        let version: Option<i64> = c
            .query("SELECT max(version) FROM schema_version")
            .map_err(|e| pg_error("reading the schema version", e))?
            .first()
            .and_then(|r| r.get(0));
        let names: Vec<String> = c
            .query("SELECT storage_name FROM document_files ORDER BY storage_name")
            .map_err(|e| pg_error("listing the document files", e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let path = path.to_string_lossy();
        run_tool(
            "pg_dump",
            &store.url,
            &[
                "--format=custom",
                "--no-owner",
                "--no-privileges",
                "--snapshot",
                &snapshot,
                "--file",
                &path,
            ],
        )?;
        Ok(DatabaseDump {
            entry: "db.pgdump",
            schema_version: u32::try_from(version.unwrap_or(0)).unwrap_or(0),
            storage_names: names,
        })
    })();
    let _ = pooled.client.batch_execute("COMMIT");
    store.give_back(pooled);
    result
}

/// The URL without its password, and the password (handed to `pg_dump`/`pg_restore` in
/// `PGPASSWORD`, never on their command line).
fn split_password(url: &str) -> (String, Option<String>) {
    let password = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => url[scheme + 3..at]
            .split_once(':')
            .map(|(_, p)| p.to_owned()),
        _ => None,
    };
    (redact(url), password)
}

/// Runs `pg_dump` or `pg_restore` against `url` with `args`.
pub(crate) fn run_tool(tool: &str, url: &str, args: &[&str]) -> Result<()> {
    let (url, password) = split_password(url);
    let mut command = std::process::Command::new(tool);
    command.args(args).arg("--dbname").arg(&url);
    if let Some(p) = password {
        command.env("PGPASSWORD", p);
    }
    let output = command
        .output()
        .map_err(|e| Error::storage(format!("running {tool} (is it installed?)"), e))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::storage(
            format!("running {tool}"),
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ))
    }
}

/// Checks a `pg_dump -Fc` file before a restore loads it, without touching any database:
/// `pg_restore` converts the whole dump to SQL text (discarded), which reads back and
/// decompresses every entry (a damaged dump fails here), and the rows of `schema_version` are
/// read from that text: a version newer than this build's ([`SCHEMA_VERSION`]) is refused.
/// Returns the dump's schema version and the storage names of the document files its rows of
/// `document_files` name (a restore writes no other document file). Problems are
/// [`Error::InvalidInput`].
pub(crate) fn check_dump(path: &Path) -> Result<DatabaseDump> {
    use std::io::BufRead;
    let mut child = std::process::Command::new("pg_restore")
        // The SQL text on stdout, read below (recent versions insist on naming it).
        .arg("--file=-")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::storage("running pg_restore (is it installed?)", e))?;
    // Drained on its own thread: a full stderr pipe would stall pg_restore.
    let stderr = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
            text
        })
    });
    let mut version: Option<i64> = None;
    let mut storage_names = Vec::new();
    // The table whose `COPY` rows are being read: the versions, or the document files with the
    // position of their `storage_name` column.
    enum Copying {
        Nothing,
        Versions,
        Files(usize),
    }
    let mut copying = Copying::Nothing;
    if let Some(out) = child.stdout.take() {
        let mut out = std::io::BufReader::new(out);
        let mut line = Vec::new();
        loop {
            line.clear();
            match out.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end();
            match copying {
                _ if text == "\\." => copying = Copying::Nothing,
                Copying::Versions => {
                    if let Ok(v) = text.trim().parse::<i64>() {
                        version = Some(version.map_or(v, |m| m.max(v)));
                    }
                }
                Copying::Files(column) => {
                    if let Some(name) = text.split('\t').nth(column) {
                        storage_names.push(name.to_owned());
                    }
                }
                Copying::Nothing => {
                    // `COPY public.document_files (id, …, storage_name, …) FROM stdin;`
                    let Some((table, columns)) = text
                        .strip_prefix("COPY ")
                        .and_then(|rest| rest.split_once(" ("))
                        .and_then(|(t, rest)| Some((t, rest.split_once(')')?.0)))
                    else {
                        continue;
                    };
                    let table = table.rsplit('.').next().unwrap_or(table).trim_matches('"');
                    let mut columns = columns.split(',').map(|c| c.trim().trim_matches('"'));
                    copying = match table {
                        "schema_version" => Copying::Versions,
                        "document_files" => columns
                            .position(|c| c == "storage_name")
                            .map_or(Copying::Nothing, Copying::Files),
                        _ => Copying::Nothing,
                    };
                }
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| Error::storage("running pg_restore", e))?;
    let errors = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if !status.success() {
        return Err(Error::InvalidInput(format!(
            "the backup's PostgreSQL dump cannot be read: {}",
            errors.trim()
        )));
    }
    let version = version.ok_or_else(|| {
        Error::InvalidInput("the backup's PostgreSQL dump holds no schema version".to_owned())
    })?;
    let version = u32::try_from(version).unwrap_or(u32::MAX);
    if version > SCHEMA_VERSION {
        return Err(Error::InvalidInput(format!(
            "the backup's database has schema version {version}, newer than this docmeta \
             ({SCHEMA_VERSION}); restore it with the docmeta that made it, or a newer one"
        )));
    }
    Ok(DatabaseDump {
        entry: "db.pgdump",
        schema_version: version,
        storage_names,
    })
}
