-- PostgreSQL's form of sqlite/0014_device_creates.sql (see there).
CREATE TABLE device_creates (
    device_id BIGINT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    document_id BIGINT NOT NULL,
    PRIMARY KEY (device_id, key)
);
ALTER TABLE devices ADD COLUMN last_sync BIGINT;
-- A document's cabinets are read with every document a replica is sent.
CREATE INDEX IF NOT EXISTS cabinet_documents_by_document ON cabinet_documents(document_id);
