//! `docmeta search ...`: the search index's commands.

use docmeta_core::Docmeta;
use docmeta_core::{SearchWork, SearchWorkRun, SearchWorkState};

use super::{AnyError, SearchCommand, Wait, open, progress};

pub(super) fn run(command: SearchCommand) -> Result<(), AnyError> {
    match command {
        SearchCommand::Reindex { data, wait } => {
            let db = open(&data, false)?;
            let started = std::time::Instant::now();
            let Some(n) = search_work(&db, &SearchWork::Reindex, "reindex", wait)? else {
                return Ok(());
            };
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "indexed {n} documents in {seconds:.1} s ({:.0} documents per minute)",
                n as f64 * 60.0 / seconds.max(0.001)
            );
        }
        SearchCommand::Status { data } => {
            let db = open(&data, false)?;
            let s = db.search_status()?;
            println!("documents.document: {}", s.documents);
            println!("metadata.documentmetadata: {}", s.metadata_values);
            println!("size: {} bytes", s.size_bytes);
            println!("events not yet indexed: {}", s.events_behind);
            let verdict = if s.schema_current {
                "current"
            } else {
                "outdated: run `docmeta search upgrade`"
            };
            println!("schema version: {} ({verdict})", s.schema_version);
        }
        SearchCommand::Initialize { data, wait } => {
            let db = open(&data, false)?;
            if search_work(&db, &SearchWork::Initialize, "initialize", wait)?.is_some() {
                println!("search index recreated empty; run `docmeta search reindex` to fill it");
            }
        }
        SearchCommand::Upgrade { data, wait } => {
            let db = open(&data, false)?;
            if db.search_status()?.schema_current {
                println!("search index is current");
            } else if search_work(&db, &SearchWork::Upgrade, "upgrade", wait)?.is_some() {
                println!("search index rebuilt with the current schema");
            }
        }
        SearchCommand::IndexObjects {
            data,
            wait,
            model,
            ids,
        } => {
            let db = open(&data, false)?;
            let ids = ids.as_deref().map(parse_ids).transpose()?;
            let work = SearchWork::IndexObjects { model, ids };
            if let Some(n) = search_work(&db, &work, "index-objects", wait)? {
                println!("indexed {n} documents");
            }
        }
    }
    Ok(())
}

/// Runs search work here, or hands it to the process holding the index writer and (unless
/// `--no-wait`) follows it with the same progress display. `Some(n)`: finished, `n` documents.
fn search_work(
    db: &Docmeta,
    work: &SearchWork,
    what: &'static str,
    wait: Wait,
) -> Result<Option<usize>, AnyError> {
    let mut shown = progress(what);
    let ticket = match db.search_work(work, &mut shown)? {
        SearchWorkRun::Done(n) => return Ok(Some(n)),
        SearchWorkRun::HandedOff(ticket) => ticket,
    };
    let task = ticket.task;
    let holder = db.search_writer_pid().map_or_else(
        || "another process".to_owned(),
        |pid| format!("process {pid}"),
    );
    eprintln!(
        "{holder} (a running `docmeta serve`) holds the search index writer: queued as task \
         {task} for it"
    );
    if wait.no_wait {
        println!("queued as task {task}; the server runs it (GET /api/v4/tasks/ lists it)");
        return Ok(None);
    }
    let mut seen = (0, 0);
    loop {
        match db.search_work_state(&ticket)? {
            SearchWorkState::Done(indexed) => {
                let n = indexed.unwrap_or(seen.1);
                if seen != (n, n) {
                    shown(n, n);
                }
                return Ok(Some(n));
            }
            SearchWorkState::Failed(e) => return Err(format!("task {task} failed: {e}").into()),
            SearchWorkState::Running { done, total } if total > 0 && (done, total) != seen => {
                seen = (done, total);
                shown(done, total);
            }
            SearchWorkState::Running { .. } | SearchWorkState::Pending { .. } => {}
        }
        // The server stopped before running it: this command now holds the writer.
        if let Some(n) = db.adopt_search_work(&ticket, &mut shown)? {
            eprintln!("the process holding the search index writer stopped: ran task {task} here");
            return Ok(Some(n));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Parses `1-10,15` into ids.
fn parse_ids(text: &str) -> Result<Vec<i64>, AnyError> {
    let mut ids = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (i64, i64) = (a.trim().parse()?, b.trim().parse()?);
                if b < a || b - a > 10_000_000 {
                    return Err(format!("bad id range '{part}'").into());
                }
                ids.extend(a..=b);
            }
            None => ids.push(part.parse()?),
        }
    }
    Ok(ids)
}
