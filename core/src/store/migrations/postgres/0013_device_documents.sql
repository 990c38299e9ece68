-- PostgreSQL's form of sqlite/0013_device_documents.sql (see there).
CREATE TABLE device_documents (
    device_id BIGINT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    document_id BIGINT NOT NULL,
    pass BIGINT NOT NULL,
    PRIMARY KEY (device_id, document_id)
);
CREATE INDEX device_documents_by_pass ON device_documents(device_id, pass, document_id);
ALTER TABLE devices ADD COLUMN sync_pass BIGINT NOT NULL DEFAULT 0;
