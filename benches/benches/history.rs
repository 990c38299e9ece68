//! History and the tamper-evident event log, timed as whole calls (not a criterion benchmark:
//! the data is built once, then each call is timed many times):
//! - `value_at` on a document whose value changed CHANGES times (default 10,000; target: at
//!   most 1 ms), at times spread over its history, with OTHER events of other documents
//!   (default 200,000) in the log;
//! - a page of 50 of that document's history (target: at most 5 ms), first, middle and last
//!   page, of one type and of the whole document;
//! - `verify_events` over EVENTS events (default 1,000,000; target: at most 10 s).
//!
//! `cargo bench -p docmeta-benches --bench history` (SQLite, in a temporary data directory).

use std::time::{Duration, Instant};

use chrono::Utc;
use docmeta_core::store::{Mode, Param};
use docmeta_core::{Docmeta, MetadataTypeInput, PageRequest};

const CONFIG: &str = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n";

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn open(dir: &std::path::Path) -> Docmeta {
    std::fs::write(dir.join("config.yml"), CONFIG).expect("config");
    Docmeta::builder()
        .data_dir(dir)
        .worker(false)
        .open()
        .expect("open")
}

/// Writes `n` value events of other documents straight into the store's table, in
/// transactions of 20,000, unsealed (the log's size is what matters here, not how the events
/// came; the next open of a database with no sealed event seals them).
fn fill(db: &Docmeta, n: usize, first_document: i64) {
    let mut left = n;
    let mut i = 0i64;
    while left > 0 {
        let chunk = left.min(20_000);
        let mut tx = db.store().begin(Mode::Write).expect("begin");
        for _ in 0..chunk {
            let label = format!("Document {}", i % 1000);
            let changes = format!(
                r#"[{{"field":"value","before":"{i}","after":"{}"}}]"#,
                i + 1
            );
            tx.execute(
                "INSERT INTO events (timestamp, name, target_kind, target_id, target_label, \
                     action_kind, action_id, action_label, changes) \
                 VALUES (?1, 'metadata.document_metadata_edited', 'documents.document', ?2, ?3, \
                     'metadata.metadatatype', ?4, 'Amount', ?5)",
                &[
                    Param::Int(Utc::now().timestamp_micros()),
                    Param::Int(first_document + i % 1000),
                    Param::Text(&label),
                    Param::Int(1 + i % 5),
                    Param::Text(&changes),
                ],
            )
            .expect("insert");
            i += 1;
        }
        tx.commit().expect("commit");
        left -= chunk;
    }
}

fn summary(name: &str, mut samples: Vec<Duration>, target: &str) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{name}: median {:.3} ms, p99 {:.3} ms, max {:.3} ms over {} calls (target: {target})",
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        samples.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        samples.len()
    );
}

fn main() {
    let changes = env("CHANGES", 10_000);
    let other = env("OTHER", 200_000);
    let events = env("EVENTS", 1_000_000);

    // ----- history -------------------------------------------------------------------------
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice").expect("type");
    let amount = admin
        .create_metadata_type(MetadataTypeInput::new("amount", "Amount"))
        .expect("mt");
    let note = admin
        .create_metadata_type(MetadataTypeInput::new("note", "Note"))
        .expect("mt");
    admin
        .associate(invoice.id, amount.id, false)
        .expect("assoc");
    admin.associate(invoice.id, note.id, false).expect("assoc");
    let doc = admin
        .create_document(invoice.id, "Busy invoice", &[])
        .expect("doc")
        .document;
    fill(&db, other / 2, 1000);
    let value = admin
        .add_document_metadata(doc.id, amount.id, "0")
        .expect("value");
    admin
        .add_document_metadata(doc.id, note.id, "first")
        .expect("value");
    let started = Instant::now();
    let from = Utc::now();
    for i in 1..changes {
        admin
            .edit_document_metadata(doc.id, value.value.id, &i.to_string(), None)
            .expect("edit");
    }
    let to = Utc::now();
    fill(&db, other - other / 2, 2000);
    println!(
        "built: {changes} changes of one value in {:.1} s, {other} other events",
        started.elapsed().as_secs_f64()
    );
    let span = (to - from).num_microseconds().unwrap_or(1).max(1);
    let mut samples = Vec::new();
    for k in 0..2000i64 {
        let at = from + chrono::Duration::microseconds(span * ((k * 7919) % 2000) / 2000);
        let t = Instant::now();
        let v = admin.value_at(doc.id, amount.id, at).expect("value_at");
        samples.push(t.elapsed());
        assert!(v.is_some());
    }
    summary("value_at", samples, "<= 1 ms");
    // A type changed once, before all of the other's changes: the read passes them all.
    let mut samples = Vec::new();
    for k in 0..2000i64 {
        let at = from + chrono::Duration::microseconds(span * ((k * 7919) % 2000) / 2000);
        let t = Instant::now();
        let v = admin.value_at(doc.id, note.id, at).expect("value_at");
        samples.push(t.elapsed());
        assert_eq!(v.as_deref(), Some("first"));
    }
    summary(
        "value_at of a type changed once, 10,000 changes of another after it",
        samples,
        "<= 1 ms",
    );
    let mut samples = Vec::new();
    for k in 0..500i64 {
        let at = from + chrono::Duration::microseconds(span * ((k * 7919) % 500) / 500);
        let t = Instant::now();
        let v = admin.metadata_at(doc.id, at).expect("metadata_at");
        samples.push(t.elapsed());
        assert_eq!(v.len(), 2);
    }
    summary("metadata_at (2 types)", samples, "none");
    let pages = changes.div_ceil(50);
    for (label, metadata_type) in [("of one type", Some(amount.id)), ("of the document", None)] {
        for (which, page) in [("first", 1), ("middle", pages / 2), ("last", pages)] {
            let mut samples = Vec::new();
            for _ in 0..200 {
                let t = Instant::now();
                let p = admin
                    .history(doc.id, metadata_type, PageRequest::new(page, 50))
                    .expect("history");
                samples.push(t.elapsed());
                assert!(!p.items.is_empty());
            }
            summary(
                &format!("history page of 50, {which} page, {label}"),
                samples,
                "<= 5 ms",
            );
        }
    }
    drop(db);

    // ----- verify ----------------------------------------------------------------------------
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    fill(&db, events, 1);
    drop(db);
    // Opened again: a database whose events were never sealed (one from before the chain)
    // has them sealed now.
    let started = Instant::now();
    let db = open(dir.path());
    println!(
        "sealed {events} events when the database was opened, in {:.1} s ({:.0} events/s)",
        started.elapsed().as_secs_f64(),
        events as f64 / started.elapsed().as_secs_f64()
    );
    for round in 1..=3 {
        let t = Instant::now();
        let report = db.verify_events(None, |_, _| {}).expect("verify");
        let took = t.elapsed();
        assert!(report.is_intact(), "{report:?}");
        println!(
            "verify_events round {round}: {} events in {:.2} s ({:.0} events/s; target: 1,000,000 in <= 10 s)",
            report.verified,
            took.as_secs_f64(),
            report.verified as f64 / took.as_secs_f64()
        );
    }
}
