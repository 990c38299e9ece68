-- What each event changed, field by field, from what to what: a JSON array of
-- {"field": ..., "before": ..., "after": ...}, written with the event. Events written before
-- this migration changed nothing that was recorded, and read as no changes.
ALTER TABLE events ADD COLUMN changes TEXT NOT NULL DEFAULT '[]';
