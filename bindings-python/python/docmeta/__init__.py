"""docmeta: the metadata, access-control, search and backup core of a document-management system.

    import docmeta

    with docmeta.Docmeta.open("./data") as db:
        admin = db.system()
        invoice = admin.create_document_type("Invoice")
        doc = admin.create_document(invoice.id, "INV-1")

Every call releases the GIL; a ``Docmeta`` may be shared between threads. Errors are
``docmeta.Error`` subclasses: ``ValidationError`` and ``Conflict`` carry ``.field`` and
``.message``.
"""

from ._docmeta import (
    Acl,
    Cabinet,
    Conflict,
    DecryptionError,
    Docmeta,
    Document,
    DocumentFile,
    DocumentIterator,
    DocumentMetadata,
    DocumentPage,
    DocumentType,
    Error,
    Event,
    InvalidInput,
    MetadataPage,
    MetadataType,
    NotFound,
    PermissionDenied,
    Session,
    StorageError,
    StorageFull,
    DeadlineExceeded,
    Task,
    User,
    ValidationError,
    Workflow,
    WorkflowInstance,
    WorkflowLogEntry,
    WorkflowState,
    WorkflowTransition,
    backup_damaged_files,
    restore,
    verify_backup,
)

__all__ = [
    "Acl",
    "Cabinet",
    "Conflict",
    "DecryptionError",
    "Docmeta",
    "Document",
    "DocumentFile",
    "DocumentIterator",
    "DocumentMetadata",
    "DocumentPage",
    "DocumentType",
    "Error",
    "Event",
    "InvalidInput",
    "MetadataPage",
    "MetadataType",
    "NotFound",
    "PermissionDenied",
    "Session",
    "StorageError",
    "StorageFull",
    "DeadlineExceeded",
    "Task",
    "User",
    "ValidationError",
    "Workflow",
    "WorkflowInstance",
    "WorkflowLogEntry",
    "WorkflowState",
    "WorkflowTransition",
    "backup_damaged_files",
    "restore",
    "verify_backup",
]
