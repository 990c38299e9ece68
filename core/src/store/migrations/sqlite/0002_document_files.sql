-- Document files: the uploaded name, size, SHA-256 and MIME type of each file; the
-- bytes live in DATA/document_file_storage/ under `storage_name`, plain or MENC (`encrypted`).
CREATE TABLE document_files (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES documents(id),
    filename TEXT NOT NULL,
    size INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    created INTEGER NOT NULL,
    storage_name TEXT NOT NULL UNIQUE,
    encrypted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX document_files_by_document ON document_files(document_id, id);
