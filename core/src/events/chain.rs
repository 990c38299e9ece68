//! The hash chain that makes the event log tamper-evident: each event's hash covers every field
//! the store keeps of it and the hash of the event before it in commit order, so that changing
//! one byte of a stored event, removing one, inserting one or swapping two changes every hash
//! from there on. Checkpoints (a position and its hash) are signed with the installation's
//! Ed25519 key, so that a chain rebuilt from the altered events cannot pass for the original.
//!
//! Part of `events` (layer 2): only the encoding and hashing; the store seals events with it and
//! `audit` walks the chain.

use ring::digest;

/// The hash before the first event of a log (and the `prev` of the first event sealed).
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// An event as the store keeps it, every column, as the chain hashes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredEvent {
    /// Its place in the chain, from 1, without gaps.
    pub seq: i64,
    pub id: i64,
    /// Microseconds since the Unix epoch.
    pub timestamp: i64,
    pub name: String,
    pub actor_id: Option<i64>,
    pub target_kind: String,
    pub target_id: i64,
    pub target_label: String,
    pub action_kind: Option<String>,
    pub action_id: Option<i64>,
    pub action_label: Option<String>,
    /// 0 or 1 (see `changes_shared_state`).
    pub follow: i64,
    /// The JSON text of its changes, as stored.
    pub changes: String,
    /// The writing transaction's id on PostgreSQL (0 on SQLite, which has no such column): how
    /// the sealer orders events, not hashed (a restore into another PostgreSQL cluster rewrites
    /// it; the chain's own order is `seq`).
    pub tx: i64,
}

/// Appends one field to the hashed bytes: a tag saying what it is, then a fixed-size integer
/// or a length-prefixed text, so that no two different events encode to the same bytes.
enum Field<'a> {
    Int(i64),
    Text(&'a str),
    Null,
}

fn put(ctx: &mut digest::Context, field: Field<'_>) {
    match field {
        Field::Null => ctx.update(&[0]),
        Field::Int(v) => {
            ctx.update(&[1]);
            ctx.update(&v.to_be_bytes());
        }
        Field::Text(s) => {
            ctx.update(&[2]);
            ctx.update(&(s.len() as u64).to_be_bytes());
            ctx.update(s.as_bytes());
        }
    }
}

fn opt_int(v: Option<i64>) -> Field<'static> {
    v.map_or(Field::Null, Field::Int)
}

fn opt_text(v: Option<&str>) -> Field<'_> {
    v.map_or(Field::Null, Field::Text)
}

/// The hash of `e` following `prev`: SHA-256 of a version tag, `prev` and every field of `e`.
pub(crate) fn chain_hash(prev: &[u8; 32], e: &StoredEvent) -> [u8; 32] {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(b"docmeta-event-v1\0");
    ctx.update(prev);
    put(&mut ctx, Field::Int(e.seq));
    put(&mut ctx, Field::Int(e.id));
    put(&mut ctx, Field::Int(e.timestamp));
    put(&mut ctx, Field::Text(&e.name));
    put(&mut ctx, opt_int(e.actor_id));
    put(&mut ctx, Field::Text(&e.target_kind));
    put(&mut ctx, Field::Int(e.target_id));
    put(&mut ctx, Field::Text(&e.target_label));
    put(&mut ctx, opt_text(e.action_kind.as_deref()));
    put(&mut ctx, opt_int(e.action_id));
    put(&mut ctx, opt_text(e.action_label.as_deref()));
    put(&mut ctx, Field::Int(e.follow));
    put(&mut ctx, Field::Text(&e.changes));
    let mut out = [0; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// The bytes a checkpoint's signature covers. A prune's base (where the chain starts after it)
/// is signed under a tag of its own, so that no periodic checkpoint can be taken for one.
pub(crate) fn checkpoint_message(
    seq: i64,
    event_id: i64,
    hash: &[u8; 32],
    created: i64,
    base: bool,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(64);
    let tag: &[u8] = if base {
        b"docmeta-prune-base-v1\0"
    } else {
        b"docmeta-checkpoint-v1\0"
    };
    m.extend_from_slice(tag);
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(&event_id.to_be_bytes());
    m.extend_from_slice(hash);
    m.extend_from_slice(&created.to_be_bytes());
    m
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    crate::config::encode_hex(bytes)
}

/// The bytes of hex `text`, `None` when it is not hex of `N` bytes.
pub(crate) fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    crate::config::decode_hex(text)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> StoredEvent {
        StoredEvent {
            seq: 1,
            id: 7,
            timestamp: 1_700_000_000_000_000,
            name: "documents.document_created".into(),
            actor_id: Some(2),
            target_kind: "documents.document".into(),
            target_id: 3,
            target_label: "Invoice".into(),
            action_kind: None,
            action_id: None,
            action_label: None,
            follow: 1,
            changes: "[]".into(),
            tx: 0,
        }
    }

    /// A change to one field of an event.
    type Edit = Box<dyn Fn(&mut StoredEvent)>;

    #[test]
    fn every_field_and_the_previous_hash_change_the_hash() {
        let base = chain_hash(&GENESIS, &event());
        assert_ne!(chain_hash(&[1; 32], &event()), base);
        let edits: Vec<Edit> = vec![
            Box::new(|e| e.seq = 2),
            Box::new(|e| e.id = 8),
            Box::new(|e| e.timestamp += 1),
            Box::new(|e| e.name.push('x')),
            Box::new(|e| e.actor_id = None),
            Box::new(|e| e.target_kind.push('x')),
            Box::new(|e| e.target_id = 4),
            Box::new(|e| e.target_label = "Invoicf".into()),
            Box::new(|e| e.action_kind = Some(String::new())),
            Box::new(|e| e.action_id = Some(0)),
            Box::new(|e| e.action_label = Some(String::new())),
            Box::new(|e| e.follow = 0),
            Box::new(|e| e.changes = "[ ]".into()),
        ];
        for edit in edits {
            let mut e = event();
            edit(&mut e);
            assert_ne!(chain_hash(&GENESIS, &e), base, "{e:?}");
        }
    }

    #[test]
    fn the_transaction_id_is_not_hashed() {
        // A restore into another PostgreSQL cluster rewrites it.
        let mut e = event();
        e.tx = 42;
        assert_eq!(chain_hash(&GENESIS, &e), chain_hash(&GENESIS, &event()));
    }

    #[test]
    fn texts_are_length_prefixed() {
        // Moving a byte from one text to the next changes the hash.
        let mut a = event();
        a.target_kind = "ab".into();
        a.target_label = "c".into();
        let mut b = event();
        b.target_kind = "a".into();
        b.target_label = "bc".into();
        assert_ne!(chain_hash(&GENESIS, &a), chain_hash(&GENESIS, &b));
    }

    #[test]
    fn hex_round_trips() {
        let h = chain_hash(&GENESIS, &event());
        assert_eq!(unhex::<32>(&hex(&h)), Some(h));
        assert_eq!(unhex::<32>("zz"), None);
        assert_eq!(unhex::<2>("0g00"), None);
    }
}
