//! The native module `docmeta._docmeta` behind the Python package `docmeta`.
//!
//! Every call into docmeta-core releases the GIL (`Python::detach`), so a `Docmeta` handle can
//! be shared between Python threads and store, search, backup and crypto work runs in parallel
//! with Python code. Records are frozen classes; times are timezone-aware `datetime`s; core
//! errors become `docmeta.Error` subclasses.
//!
//! This file only registers the module's contents: `errors` (the exceptions, and `run`, which
//! calls the core with the GIL released), `records` (the frozen record classes), `docmeta` (the
//! `Docmeta` class), `search_work` (more `Docmeta` methods: index work handed between
//! processes), `session/` (the `Session` class, one file per concern), `classes` (applications'
//! validators and parsers written in Python, and validation without a database) and `backup`
//! (module functions on archives). Imports point one way: classes use `records` and `errors`,
//! never each other, except `Docmeta` handing out `Session`s and taking `Classes`.

mod backup;
mod classes;
mod docmeta;
mod errors;
mod records;
mod replica;
mod search_work;
mod session;

use pyo3::prelude::*;

use crate::backup::{backup_damaged_files, prune_backups, restore, verify_backup};
use crate::classes::{Classes, MetadataProcessor, parse, validate};
use crate::docmeta::{Docmeta, checkpoint_signed_by};
use crate::errors::*;
use crate::records::*;
use crate::search_work::{SearchTicket, SearchWorkResult};
use crate::session::{DocumentIterator, Session};

#[pymodule]
fn _docmeta(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Docmeta>()?;
    m.add_class::<Session>()?;
    m.add_class::<replica::Replica>()?;
    m.add_class::<SyncProgress>()?;
    m.add_class::<PendingWrite>()?;
    m.add_class::<PushOutcome>()?;
    m.add_class::<RejectedWrite>()?;
    m.add_class::<DocumentIterator>()?;
    m.add_class::<MetadataType>()?;
    m.add_class::<DocumentType>()?;
    m.add_class::<Document>()?;
    m.add_class::<DocumentMetadata>()?;
    m.add_class::<DocumentFile>()?;
    m.add_class::<User>()?;
    m.add_class::<Acl>()?;
    m.add_class::<Event>()?;
    m.add_class::<ValueChange>()?;
    m.add_class::<HistoryPage>()?;
    m.add_class::<PastValue>()?;
    m.add_class::<ValueMisfit>()?;
    m.add_class::<ValueTypeCheck>()?;
    m.add_class::<TemplatePreview>()?;
    m.add_class::<AuditReport>()?;
    m.add_class::<EventChange>()?;
    m.add_class::<EventFeed>()?;
    m.add_class::<Cabinet>()?;
    m.add_class::<Task>()?;
    m.add_class::<Device>()?;
    m.add_class::<NewDevice>()?;
    m.add_class::<SyncedDocument>()?;
    m.add_class::<SyncSchema>()?;
    m.add_class::<SyncedInstance>()?;
    m.add_class::<SyncedWorkflow>()?;
    m.add_class::<SyncBatch>()?;
    m.add_class::<Webhook>()?;
    m.add_class::<CreatedWebhook>()?;
    m.add_class::<WebhookDelivery>()?;
    m.add_class::<Workflow>()?;
    m.add_class::<WorkflowState>()?;
    m.add_class::<WorkflowTransition>()?;
    m.add_class::<WorkflowInstance>()?;
    m.add_class::<WorkflowLogEntry>()?;
    m.add_class::<DocumentPage>()?;
    m.add_class::<MetadataPage>()?;
    m.add_class::<Group>()?;
    m.add_class::<DocumentWithFile>()?;
    m.add_class::<Role>()?;
    m.add_class::<Association>()?;
    m.add_class::<MetadataValueDetail>()?;
    m.add_class::<DocumentDetails>()?;
    m.add_class::<ObjectRef>()?;
    m.add_class::<Grant>()?;
    m.add_class::<Explanation>()?;
    m.add_class::<PruneDecision>()?;
    m.add_class::<WorkflowAction>()?;
    m.add_class::<SearchTicket>()?;
    m.add_class::<SearchWorkResult>()?;
    m.add_class::<SearchWorkState>()?;
    m.add_class::<Classes>()?;
    m.add_class::<MetadataProcessor>()?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(prune_backups, m)?)?;
    m.add_function(wrap_pyfunction!(verify_backup, m)?)?;
    m.add_function(wrap_pyfunction!(backup_damaged_files, m)?)?;
    m.add_function(wrap_pyfunction!(restore, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_signed_by, m)?)?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("ValidationError", py.get_type::<ValidationError>())?;
    m.add("PermissionDenied", py.get_type::<PermissionDenied>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    m.add("InvalidInput", py.get_type::<InvalidInput>())?;
    m.add("DecryptionError", py.get_type::<DecryptionError>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("StorageFull", py.get_type::<StorageFull>())?;
    m.add("Busy", py.get_type::<Busy>())?;
    m.add("DeadlineExceeded", py.get_type::<DeadlineExceeded>())?;
    m.add("Throttled", py.get_type::<Throttled>())?;
    Ok(())
}
