-- PostgreSQL's form of sqlite/0010_event_changes.sql: each event's changes as JSON text, `[]`
-- for the events written before.
ALTER TABLE events ADD COLUMN changes TEXT NOT NULL DEFAULT '[]';
