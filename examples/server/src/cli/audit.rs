//! `docmeta audit verify | checkpoint | public-key | prune`.

use docmeta_core::Checkpoint;

use super::{AnyError, AuditCommand, open, progress};

pub(super) fn run(command: AuditCommand) -> Result<(), AnyError> {
    match command {
        AuditCommand::Verify { data, checkpoint } => {
            let given: Option<Checkpoint> = match checkpoint {
                Some(path) => {
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| format!("reading {}: {e}", path.display()))?;
                    Some(
                        serde_json::from_str(&text)
                            .map_err(|e| format!("{} is not a checkpoint: {e}", path.display()))?,
                    )
                }
                None => None,
            };
            let db = open(&data, false)?;
            let mut shown = progress("verify");
            let r = db.verify_events(given.as_ref(), |done, total| {
                shown(done as usize, total as usize)
            })?;
            println!(
                "verified {} events (positions {} to {}) and {} checkpoints{}",
                r.verified,
                r.start + 1,
                r.head,
                r.checkpoints,
                if r.unsealed > 0 {
                    format!("; {} just committed, not sealed yet", r.unsealed)
                } else {
                    String::new()
                }
            );
            match r.failure {
                None => {
                    println!("the event log is intact");
                    Ok(())
                }
                Some(f) => {
                    println!(
                        "FAILED at {}{}: {}",
                        f.seq
                            .map_or_else(|| "an event".to_owned(), |s| format!("position {s}")),
                        f.event_id
                            .map_or_else(String::new, |id| format!(" (event {id})")),
                        f.reason
                    );
                    Err("the event log was altered".into())
                }
            }
        }
        AuditCommand::Checkpoint { data } => {
            let db = open(&data, false)?;
            let c = db.audit_checkpoint()?;
            println!("{}", serde_json::to_string_pretty(&c)?);
            Ok(())
        }
        AuditCommand::PublicKey { data } => {
            let db = open(&data, false)?;
            println!("{}", db.audit_public_key()?);
            Ok(())
        }
        AuditCommand::Prune { data, before } => {
            let before = chrono::DateTime::parse_from_rfc3339(&before)
                .map_err(|e| format!("--before {before:?} is not an RFC 3339 time: {e}"))?
                .with_timezone(&chrono::Utc);
            let db = open(&data, false)?;
            let r = db.prune_events(before)?;
            match r.base {
                Some(base) => println!(
                    "removed {} events; the log now starts after position {} (checkpoint {})",
                    r.removed, base.seq, base.hash
                ),
                None => println!("no event to remove before {before}"),
            }
            Ok(())
        }
    }
}
