//! `docmeta storage encrypt | decrypt | verify`.

use docmeta_core::Docmeta;

use super::{AnyError, Data, StorageCommand, open, open_with, progress};

pub(super) fn run(command: StorageCommand) -> Result<(), AnyError> {
    let (data, encrypt) = match command {
        StorageCommand::Encrypt { data } => (data, true),
        StorageCommand::Decrypt { data } => (data, false),
        StorageCommand::Verify { data } => return verify(&data),
    };
    // Alone: files are renamed under a server that may be serving them.
    let db = open_with(&data, Docmeta::builder().exclusive(true))?;
    let mut shown = progress("convert");
    let n = db.convert_storage(encrypt, |done, total| shown(done as usize, total as usize))?;
    println!(
        "{} {n} document files",
        if encrypt { "encrypted" } else { "decrypted" }
    );
    if !encrypt {
        println!("set documents_file_storage_backend: plain in config.yml");
    }
    Ok(())
}

/// `docmeta storage verify`: one line per damaged file on standard output, then a summary;
/// an error (exit status 1) when any file is damaged.
fn verify(data: &Data) -> Result<(), AnyError> {
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
