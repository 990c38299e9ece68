-- Usernames that look alike (`аdmin` with a Cyrillic а, `ADMIN`, `admın`) are
-- refused. Each user keeps the key its name is compared by: the confusable skeleton (UTS #39)
-- of its case-folded NFKC form (core/src/model/username.rs). SQL cannot compute it: the
-- migration fills it for existing users in the same transaction, right after this script
-- (store::fill_username_keys). The index is not UNIQUE: users created before this version
-- whose names collide keep working (each keeps its own name and login); only a new name, or a
-- rename, whose key equals another user's is refused.
ALTER TABLE users ADD COLUMN username_key TEXT;
CREATE INDEX users_by_username_key ON users(username_key);
