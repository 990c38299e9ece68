//! Concurrent changes through sessions on a SQLite file, where units of work share commits
//! (group commit): one refused change undoes nothing of the others, and every
//! change that was acknowledged is stored and published.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use docmeta_core::{Docmeta, Error, MetadataTypeInput};

const WRITERS: usize = 8;
const EDITS: usize = 20;

#[test]
fn concurrent_edits_with_refused_ones_commit_and_publish_all_the_others() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .open()
        .expect("open");
    let admin = db.system();
    let invoices = admin.create_document_type("Invoice").expect("type");
    let due = admin
        .create_metadata_type(
            MetadataTypeInput::new("due", "Due date")
                .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
        )
        .expect("metadata type");
    admin
        .associate(invoices.id, due.id, false)
        .expect("associate");
    let values: Vec<_> = (0..WRITERS)
        .map(|i| {
            let doc = admin
                .create_document(invoices.id, &format!("INV-{i}"), &[])
                .expect("document")
                .document;
            let value = admin
                .add_document_metadata(doc.id, due.id, "01/01/2030")
                .expect("value")
                .value;
            (doc.id, value.id)
        })
        .collect();
    let published = Arc::new(AtomicUsize::new(0));
    let counter = published.clone();
    db.subscribe(move |e| {
        if e.name == "metadata.document_metadata_edited" {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });

    // Writer 0 sends a date the parser refuses every other time; the others valid ones.
    let refused = std::thread::scope(|scope| {
        let handles: Vec<_> = values
            .iter()
            .enumerate()
            .map(|(i, &(doc, value))| {
                let session = db.system();
                scope.spawn(move || {
                    let mut refused = 0;
                    for n in 0..EDITS {
                        let text = if i == 0 && n % 2 == 0 {
                            "not a date".to_owned()
                        } else {
                            format!("{:02}/{:02}/2031", n + 1, i + 1)
                        };
                        match session.edit_document_metadata(doc, value, &text, None) {
                            Ok(_) => {}
                            Err(Error::Validation { .. }) if i == 0 => refused += 1,
                            Err(e) => panic!("writer {i}, edit {n}: {e}"),
                        }
                    }
                    refused
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .sum::<usize>()
    });

    assert_eq!(refused, EDITS / 2);
    for (i, &(doc, _)) in values.iter().enumerate() {
        assert_eq!(
            admin
                .metadata_value_of(doc, "due")
                .expect("value")
                .as_deref(),
            Some(format!("2031-{:02}-{:02}", i + 1, EDITS).as_str()),
            "writer {i}'s last edit is stored"
        );
    }
    assert_eq!(
        published.load(Ordering::SeqCst),
        WRITERS * EDITS - refused,
        "every accepted edit was published once"
    );
}
