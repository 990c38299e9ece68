//! Pruning old backups by a retention policy.
//!
//! Part of `backup` (layer 7 of `scripts/check-structure`): it may import only what `backup`
//! may (see `backup`'s module documentation).

use std::collections::HashSet;
use std::fs::{self};
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::error::Result;

use super::*;

/// Marks the newest backup of each of the `limit` most recent periods (newest first in `all`).
fn keep_newest_per_period(
    all: &mut [PruneDecision],
    limit: usize,
    what: &str,
    period: impl Fn(&DateTime<Utc>) -> String,
) {
    let mut periods = HashSet::new();
    for d in all.iter_mut() {
        let p = period(&d.info.created);
        if periods.contains(&p) {
            continue;
        }
        if periods.len() == limit {
            break;
        }
        if d.kept_because.is_none() {
            d.kept_because = Some(format!("{what} {p}"));
        }
        periods.insert(p);
    }
}

/// Applies a retention schedule (spec 8.1 item 8) to the archives (`*.tar.zst`) in `dir`: keeps
/// the newest backup of each of the last `keep_daily` days that have backups and the newest of
/// each of the last `keep_weekly` ISO weeks, plus every backup a kept incremental backup builds
/// on; deletes the rest unless `dry_run`. Files that are not docmeta backups are left alone.
pub fn prune_backups(
    dir: &Path,
    keep_daily: usize,
    keep_weekly: usize,
    dry_run: bool,
) -> Result<Vec<PruneDecision>> {
    let mut all = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err("listing the backup directory"))? {
        let path = entry
            .map_err(io_err("listing the backup directory"))?
            .path();
        if !path.to_string_lossy().ends_with(".tar.zst") {
            continue;
        }
        if let Ok(info) = read_info(&path) {
            all.push(PruneDecision {
                path,
                info,
                kept_because: None,
            });
        }
    }
    all.sort_by_key(|d| std::cmp::Reverse(d.info.created));
    keep_newest_per_period(&mut all, keep_daily, "newest of day", |t| {
        t.format("%Y-%m-%d").to_string()
    });
    keep_newest_per_period(&mut all, keep_weekly, "newest of week", |t| {
        t.format("%G-W%V").to_string()
    });
    // Bases of kept incremental backups stay, transitively.
    loop {
        let needed: HashSet<String> = all
            .iter()
            .filter(|d| d.kept_because.is_some())
            .filter_map(|d| d.info.base.clone())
            .collect();
        let mut changed = false;
        for d in all.iter_mut() {
            if d.kept_because.is_none() && needed.contains(&d.info.id) {
                d.kept_because = Some("base of a kept incremental backup".to_owned());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if !dry_run {
        for d in all.iter().filter(|d| d.kept_because.is_none()) {
            fs::remove_file(&d.path).map_err(io_err("deleting an old backup"))?;
        }
    }
    Ok(all)
}
