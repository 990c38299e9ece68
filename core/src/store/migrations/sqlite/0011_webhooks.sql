-- Webhooks: a user's subscription to the event log, delivered by HTTP POST.
--
-- A webhook belongs to the user who created it (`owner_id`); deleting the user deletes it.
-- `secret` signs every delivery (Standard Webhooks: `whsec_` and base64); it is write-only for
-- every face and lives only here, in a database that is owner-only on disk. The event names a
-- webhook is for are rows of `webhook_events`; a webhook without any is for every event.
--
-- `webhook_deliveries` is the outbox: the statement that appends an event inserts, in the same
-- transaction, one pending delivery for every active webhook of an active owner whose filter
-- matches, so no event is lost whenever the process stops. Deliveries of one webhook are sent in
-- (tx, id) order, one at a time; `tx` is 0 on SQLite, where one writer commits at a time, and
-- the writing transaction's id on PostgreSQL (see postgres/0011_webhooks.sql). A process sending
-- a delivery holds it until `lease_until`, with a random `lease_token` its outcome must match.
CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    active INTEGER NOT NULL,
    created INTEGER NOT NULL
);
CREATE INDEX webhooks_by_owner ON webhooks(owner_id, id);
CREATE TABLE webhook_events (
    webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    PRIMARY KEY (webhook_id, name)
);
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id INTEGER NOT NULL REFERENCES events(id),
    tx INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_attempt INTEGER,
    next_attempt INTEGER NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    lease_until INTEGER,
    lease_token TEXT
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(webhook_id, tx, id)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, id);
CREATE INDEX webhook_deliveries_by_age ON webhook_deliveries(status, created);
