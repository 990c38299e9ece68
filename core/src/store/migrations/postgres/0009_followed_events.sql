-- PostgreSQL's form of sqlite/0009_followed_events.sql. Followed in the gap-free commit order
-- of migration 6, so the index is on (tx, id).
ALTER TABLE events ADD COLUMN follow BIGINT NOT NULL DEFAULT 0;
CREATE INDEX events_followed ON events(tx, id) WHERE follow = 1;
