//! `docmeta demo`: loads the demo data.

use super::serve::ensure_admin;
use super::{AnyError, Data, open};

pub(super) fn run(data: &Data) -> Result<(), AnyError> {
    let db = open(data, false)?;
    ensure_admin(&db)?;
    crate::demo::load(&db)?;
    db.run_pending_tasks()?;
    Ok(())
}
