-- What the server sent to each device's replica (see session/sync.rs): a replica is told to
-- remove a document only if it was sent one, so a removal never names a document its user never
-- saw. `pass` is the device's pass (a full pass over what its user may see) that last sent the
-- document: at the end of a pass, what an earlier pass sent and this one did not is removed.
CREATE TABLE device_documents (
    device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    document_id INTEGER NOT NULL,
    pass INTEGER NOT NULL,
    PRIMARY KEY (device_id, document_id)
);
CREATE INDEX device_documents_by_pass ON device_documents(device_id, pass, document_id);
ALTER TABLE devices ADD COLUMN sync_pass INTEGER NOT NULL DEFAULT 0;
