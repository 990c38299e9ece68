//! `docmeta schema export` and `docmeta schema apply`.

use docmeta_core::{Schema, apply_schema, export_schema};

use super::{AnyError, SchemaCommand, open};

pub(super) fn run(command: SchemaCommand) -> Result<(), AnyError> {
    match command {
        SchemaCommand::Export { data } => {
            let db = open(&data, false)?;
            print!("{}", export_schema(&db)?.to_yaml()?);
        }
        SchemaCommand::Apply {
            data,
            file,
            dry_run,
        } => {
            let db = open(&data, false)?;
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("reading {}: {e}", file.display()))?;
            let schema = Schema::from_yaml(&text)?;
            let changes = apply_schema(&db, &schema, dry_run)?;
            for c in &changes {
                println!("{c}");
            }
            let verb = if dry_run { "would make" } else { "made" };
            println!("{verb} {} change(s)", changes.len());
            if !dry_run {
                db.run_pending_tasks()?;
            }
        }
    }
    Ok(())
}
