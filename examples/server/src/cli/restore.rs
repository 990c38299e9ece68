//! `docmeta restore`: restores backups into a data directory no docmeta has open.

use std::path::PathBuf;

use super::backup::print_damaged;
use super::{AnyError, Data};

pub(super) fn run(files: &[PathBuf], data: &Data) -> Result<(), AnyError> {
    let password = std::env::var(docmeta_core::PASSWORD_VARIABLE).ok();
    let r = docmeta_core::restore_to_storage(
        files,
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
    match &r.audit {
        Some(a) => println!(
            "  event log intact: {} events verified against the backup's checkpoint (position {})",
            a.verified,
            r.manifest.checkpoint.as_ref().map_or(0, |c| c.seq)
        ),
        None => println!("  no event log checkpoint in this backup (made by an earlier version)"),
    }
    println!("  documents: {}", r.documents);
    match &r.document_opened {
        Some((id, label)) => println!("  document {id} opens: {label:?}"),
        None => println!("  no document to open"),
    }
    match &r.file_checked {
        Some((id, size)) => {
            println!("  document file {id} downloads ({size} bytes) and matches its SHA-256")
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
    Ok(())
}
