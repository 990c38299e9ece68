-- Every process of an installation answers a request with every change committed before it
-- started, by any process: before it decides anything, a process reads the events
-- that change what it keeps in memory (access, credentials, compiled metadata types) and that
-- it has not applied yet. `follow` marks them when they are written, and a partial index holds
-- only them, so the read costs nothing when nothing changed. Events written before this
-- migration keep 0: a process applies what it loads at open, and follows from there.
ALTER TABLE events ADD COLUMN follow INTEGER NOT NULL DEFAULT 0;
CREATE INDEX events_followed ON events(id) WHERE follow = 1;
