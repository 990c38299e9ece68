//! Where the index lives: `DATA/search/<generation>/`, with `DATA/search/CURRENT` naming the
//! generation in use and its schema version. A rebuild fills a new generation and then swaps it
//! in (an atomic rename of `CURRENT`), so searches keep answering during a rebuild and a failed
//! rebuild leaves the old index in place.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::index::{INDEX_SCHEMA_VERSION, SearchIndex};
use crate::error::{Error, Result};

pub(crate) struct SearchHome {
    root: Option<PathBuf>,
    current: RwLock<Arc<SearchIndex>>,
    generation: Mutex<u64>,
    schema: RwLock<u32>,
    /// Identifies this index among the processes sharing a database (its cursor is its own).
    instance: String,
}

fn random_id() -> Result<String> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b)
        .map_err(|e| Error::storage("naming the search index", e.to_string()))?;
    Ok(crate::config::encode_hex(&b))
}

fn io(operation: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::storage(operation.to_owned(), e)
}

fn read_current(root: &Path) -> Option<(u64, u32)> {
    let text = std::fs::read_to_string(root.join("CURRENT")).ok()?;
    let mut generation = None;
    let mut schema = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("generation", v)) => generation = v.trim().parse().ok(),
            Some(("schema", v)) => schema = v.trim().parse().ok(),
            _ => {}
        }
    }
    Some((generation?, schema?))
}

fn write_current(root: &Path, generation: u64, schema: u32) -> Result<()> {
    let tmp = root.join("CURRENT.tmp");
    std::fs::write(&tmp, format!("generation {generation}\nschema {schema}\n"))
        .map_err(io("writing the search index pointer"))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io("syncing the search index pointer"))?;
    std::fs::rename(&tmp, root.join("CURRENT")).map_err(io("switching the search index"))
}

impl SearchHome {
    /// Opens the index under `root`, or one in memory.
    pub(crate) fn open(root: Option<&Path>) -> Result<SearchHome> {
        let Some(root) = root else {
            return Ok(SearchHome {
                root: None,
                current: RwLock::new(Arc::new(SearchIndex::in_memory()?)),
                generation: Mutex::new(1),
                schema: RwLock::new(INDEX_SCHEMA_VERSION),
                instance: random_id()?,
            });
        };
        std::fs::create_dir_all(root).map_err(io("creating the search directory"))?;
        let (mut generation, schema) = match read_current(root) {
            Some(found) => found,
            None => {
                write_current(root, 1, INDEX_SCHEMA_VERSION)?;
                (1, INDEX_SCHEMA_VERSION)
            }
        };
        if schema != INDEX_SCHEMA_VERSION {
            // Built by another docmeta: its fields differ. Start an empty index with this
            // build's fields, still recorded as outdated so that `search_upgrade` (spec 9 item 3)
            // rebuilds it.
            let _ = std::fs::remove_dir_all(root.join(generation.to_string()));
            generation += 1;
            write_current(root, generation, schema)?;
        }
        let index = SearchIndex::open(&root.join(generation.to_string()))?;
        let id_file = root.join("INSTANCE");
        let instance = match std::fs::read_to_string(&id_file) {
            Ok(id) if !id.trim().is_empty() => id.trim().to_owned(),
            _ => {
                let id = random_id()?;
                std::fs::write(&id_file, &id).map_err(io("writing the search index id"))?;
                id
            }
        };
        Ok(SearchHome {
            instance,
            root: Some(root.to_path_buf()),
            current: RwLock::new(Arc::new(index)),
            generation: Mutex::new(generation),
            schema: RwLock::new(schema),
        })
    }

    /// This index's identity among the processes sharing a database.
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    /// The index in use.
    pub(crate) fn index(&self) -> Arc<SearchIndex> {
        self.current.read().clone()
    }

    /// The schema version of the index in use, and whether it is this build's.
    pub(crate) fn schema(&self) -> (u32, bool) {
        let v = *self.schema.read();
        (v, v == INDEX_SCHEMA_VERSION)
    }

    /// Bytes the index in use takes on disk (0 in memory).
    pub(crate) fn size(&self) -> u64 {
        let Some(root) = &self.root else { return 0 };
        let dir = root.join(self.generation.lock().to_string());
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
    }

    /// A new, empty index beside the one in use.
    pub(crate) fn fresh(&self) -> Result<(u64, SearchIndex)> {
        let generation = *self.generation.lock() + 1;
        match &self.root {
            Some(root) => {
                let dir = root.join(generation.to_string());
                if dir.exists() {
                    std::fs::remove_dir_all(&dir)
                        .map_err(io("removing an abandoned search index"))?;
                }
                Ok((generation, SearchIndex::open(&dir)?))
            }
            None => Ok((generation, SearchIndex::in_memory()?)),
        }
    }

    /// Puts a filled index in use and removes the previous one.
    pub(crate) fn swap(&self, generation: u64, index: SearchIndex) -> Result<()> {
        let mut current_generation = self.generation.lock();
        if let Some(root) = &self.root {
            write_current(root, generation, INDEX_SCHEMA_VERSION)?;
        }
        let old = std::mem::replace(&mut *current_generation, generation);
        *self.current.write() = Arc::new(index);
        *self.schema.write() = INDEX_SCHEMA_VERSION;
        if let Some(root) = &self.root {
            // Searches still holding the old index keep their open files (Unix semantics).
            let _ = std::fs::remove_dir_all(root.join(old.to_string()));
        }
        Ok(())
    }

    /// Drops a partly built index.
    pub(crate) fn abandon(&self, generation: u64) {
        if let Some(root) = &self.root {
            let _ = std::fs::remove_dir_all(root.join(generation.to_string()));
        }
    }
}
