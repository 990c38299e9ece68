-- The documents each device's replica created offline (see session/sync.rs): a create pushed
-- again under the same key (its answer was lost) answers the document made the first time and
-- creates nothing. The document may be deleted since: its id is kept, not referenced.
CREATE TABLE device_creates (
    device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    document_id INTEGER NOT NULL,
    PRIMARY KEY (device_id, key)
);
-- When each device's replica was last brought up to date (see `Device::last_sync`).
ALTER TABLE devices ADD COLUMN last_sync INTEGER;
-- A document's cabinets are read with every document a replica is sent.
CREATE INDEX IF NOT EXISTS cabinet_documents_by_document ON cabinet_documents(document_id);
