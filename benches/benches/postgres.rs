//! Metadata value adds per second through PostgreSQL vs SQLite, one transaction
//! per add (the HTTP PATCH/POST pattern), with a date parser and validator, on a file-backed
//! SQLite database and on the PostgreSQL database at `DOCMETA_TEST_POSTGRES_URL` (a fresh
//! database is created; `scripts/postgres-up` starts a local cluster).
//!
//! `DOCMETA_TEST_POSTGRES_URL=$(scripts/postgres-up) cargo bench -p docmeta-benches --bench postgres`

use std::time::Instant;

use docmeta_core::{Docmeta, MetadataTypeInput};

fn adds_per_second(db: &Docmeta, n: i64) -> docmeta_core::Result<f64> {
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?.id;
    let due = admin
        .create_metadata_type(
            MetadataTypeInput::new("due", "Due")
                .parser("svc.apps.metadata.metadata_parsers.DateParser", "")
                .validation("svc.apps.metadata.metadata_validators.DateValidator", ""),
        )?
        .id;
    admin.associate(t, due, false)?;
    let docs: Vec<_> = (0..n)
        .map(|i| {
            admin
                .create_document(t, &format!("doc {i}"), &[])
                .map(|d| d.document.id)
        })
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    for d in &docs {
        admin.add_document_metadata(*d, due, "31/12/2024")?;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

fn main() -> docmeta_core::Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n: i64 = std::env::var("ADDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = Docmeta::builder()
        .data_dir(dir.path().join("sqlite"))
        .open()?;
    let s = adds_per_second(&sqlite, n)?;
    println!("SQLite (file, WAL): {s:.0} metadata value adds/s");
    let Some(base) = std::env::var("DOCMETA_TEST_POSTGRES_URL").ok() else {
        println!("PostgreSQL: skipped (DOCMETA_TEST_POSTGRES_URL is not set)");
        return Ok(());
    };
    let name = format!("docmeta_bench_{}", std::process::id());
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .expect("drop");
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("create");
    let url = format!(
        "{}/{name}",
        &base[..base.rfind('/').expect("url with a database")]
    );
    let pg = Docmeta::builder()
        .data_dir(dir.path().join("pg"))
        .postgres(&url)
        .open()?;
    let p = adds_per_second(&pg, n)?;
    println!(
        "PostgreSQL (loopback): {p:.0} metadata value adds/s ({:.2}x SQLite)",
        p / s
    );
    drop(pg);
    let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    Ok(())
}
