-- Devices: a user's sign-in for an application on a device, by a token exchanged once for the
-- password (see model/device.rs). Only the token's SHA-256 (hex) is kept: a token is 32 random
-- bytes, so a fast hash is enough, and a copy of the database signs no device in. Deleting the
-- user deletes their devices; a revoked device's row is deleted.
CREATE TABLE devices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created INTEGER NOT NULL,
    expires INTEGER NOT NULL,
    last_used INTEGER
);
CREATE INDEX devices_by_user ON devices(user_id, id);
