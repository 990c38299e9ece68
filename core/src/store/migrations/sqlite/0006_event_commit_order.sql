-- On PostgreSQL, events record the transaction that wrote them so that followers
-- read the log in commit order (see postgres/0006_event_commit_order.sql). Nothing changes on
-- SQLite: one writer at a time commits, so event ids are committed in id order already and
-- "every event after id N" is gap-free. The version exists so both stores share one numbering.
SELECT 1;
