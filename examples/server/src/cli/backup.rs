//! `docmeta backup`: writes a backup archive, or verifies or prunes archives.

use std::path::PathBuf;

use super::{AnyError, BackupCommand, Data, open, progress};

pub(super) fn run(
    command: Option<BackupCommand>,
    data: &Data,
    out: Option<PathBuf>,
    since: Option<PathBuf>,
) -> Result<(), AnyError> {
    match command {
        None => {
            let out = out.ok_or("give --out FILE (the archive to write)")?;
            let db = open(data, false)?;
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
            let m = docmeta_core::verify_backup(&file)?;
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
            let decisions = docmeta_core::prune_backups(&dir, keep_daily, keep_weekly, dry_run)?;
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

/// One line per document file a backup found damaged.
pub(super) fn print_damaged(damaged: &[docmeta_core::DamagedEntry]) {
    for d in damaged {
        match d.document_file_id {
            Some(id) => println!("DAMAGED document file {id} ({}): {}", d.path, d.damage),
            None => println!("DAMAGED {}: {}", d.path, d.damage),
        }
    }
}
