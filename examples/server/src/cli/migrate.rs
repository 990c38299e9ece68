//! `docmeta migrate [--check]`.

use docmeta_core::Docmeta;

use super::{AnyError, Data, open};

/// Applies pending migrations, or with `check` only reports whether some are pending (an
/// error if so) without opening the database for writing.
pub(super) fn run(data: &Data, check: bool) -> Result<(), AnyError> {
    if check {
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
        return Ok(());
    }
    let db = open(data, false)?;
    let applied = db.migrate()?;
    let (version, _) = db.store().schema_version()?;
    if applied.is_empty() {
        println!("database is current (schema version {version})");
    } else {
        println!("applied migrations {applied:?}; schema version {version}");
    }
    Ok(())
}
