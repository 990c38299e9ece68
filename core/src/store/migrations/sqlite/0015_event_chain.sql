-- The tamper-evident event log and value history.
-- Each event gets its place in a hash chain (`seq`, from 1, gap-free, in commit order) and
-- `hash`: SHA-256 over its stored fields and the previous event's hash (lower-case hex; see
-- `events::chain_hash`). Events written before this version are sealed when the database is
-- next opened. Signed checkpoints (a position and its hash, signed with the installation's
-- Ed25519 key) are kept in `audit_checkpoints`; the one marked `base` is where the chain
-- starts after `docmeta audit prune`.
ALTER TABLE events ADD COLUMN seq INTEGER;
ALTER TABLE events ADD COLUMN hash TEXT;
-- No index of positions: SQLite seals events in id order, so the chain is read by id (one
-- index less to write with every event); PostgreSQL's has one (see its 0015).
CREATE INDEX events_unsealed ON events(id) WHERE seq IS NULL;
-- A document's values through time: its value events (a document target, a metadata type as
-- second object) by time, each with its metadata type, so that a page of its history, the
-- value of one type at a time and the values of all at a time are read from this index alone.
-- It also finds an object's events by target, as `events_by_target` did: that index goes, so
-- that a write keeps as many event indexes to update as before.
CREATE INDEX events_history ON events(target_kind, target_id, action_kind, timestamp, id, action_id);
DROP INDEX IF EXISTS events_by_target;
CREATE TABLE audit_checkpoints (
    seq INTEGER PRIMARY KEY,
    event_id INTEGER NOT NULL,
    hash TEXT NOT NULL,
    created INTEGER NOT NULL,
    public_key TEXT NOT NULL,
    signature TEXT NOT NULL,
    base INTEGER NOT NULL DEFAULT 0
);
