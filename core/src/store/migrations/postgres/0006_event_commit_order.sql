-- PostgreSQL's form of sqlite/0006_event_commit_order.sql.
-- Writers run concurrently, so event ids are not committed in id order: a follower
-- reading "every event after id N" could miss an event with a smaller id whose transaction
-- commits later. Each event records the id of the transaction that wrote it (`tx`); followers
-- read events in (tx, id) order, and only those whose transaction is older than the oldest one
-- still running (`pg_snapshot_xmin`), which have all finished: the read is gap-free. Events
-- written before this migration keep tx = 0 and come first.
ALTER TABLE events ADD COLUMN tx BIGINT NOT NULL DEFAULT 0;
ALTER TABLE events ALTER COLUMN tx SET DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX events_in_commit_order ON events(tx, id);
