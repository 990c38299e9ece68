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
    /// `search/WRITER`, locked (with this process's id in it) while this process holds the
    /// index writer: one process per data directory writes the index, the others read it.
    writer_lock: Mutex<Option<std::fs::File>>,
}

/// The file holding the index's stable id (see [`instance_id`]).
const INSTANCE_FILE: &str = "INSTANCE";

/// The file whose lock makes a process the index's writer; it holds that process's id.
pub(crate) const WRITER_FILE: &str = "WRITER";

/// Takes `search/WRITER` if no other process holds it, and records this process's id in it.
/// The lock is the operating system's (`flock`): a crashed holder releases it.
fn take_writer_lock(root: &Path) -> Result<Option<std::fs::File>> {
    use std::io::{Seek, Write};
    let mut file = crate::owner_only::options()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(root.join(WRITER_FILE))
        .map_err(io("opening the search index's writer lock"))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Error::storage("locking the search index's writer", e));
        }
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .map_err(io("recording the search index's writer"))?;
    Ok(Some(file))
}

/// Makes `root` ready for its writer: `CURRENT` exists, and an index of another schema version
/// is replaced by an empty one (still recorded as outdated). Returns the generation and schema.
fn prepare_for_writing(root: &Path) -> Result<(u64, u32)> {
    let (mut generation, schema) = match read_current(root) {
        Some(found) => found,
        None => {
            write_current(root, 1, INDEX_SCHEMA_VERSION)?;
            (1, INDEX_SCHEMA_VERSION)
        }
    };
    if schema != INDEX_SCHEMA_VERSION {
        // Built by another docmeta: its fields differ. Start an empty index with this build's
        // fields, still recorded as outdated so that `search_upgrade` (spec 9 item 3) rebuilds
        // it.
        let _ = std::fs::remove_dir_all(root.join(generation.to_string()));
        generation += 1;
        write_current(root, generation, schema)?;
    }
    Ok((generation, schema))
}

fn random_id() -> Result<String> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b)
        .map_err(|e| Error::storage("naming the search index", e.to_string()))?;
    Ok(crate::config::encode_hex(&b))
}

/// The index's stable id, `search/INSTANCE`, made by the first process to open the directory.
/// Search tasks name it (see `Docmeta::search_index_id`), so every process on the directory
/// must read the same id: it is written whole under a temporary name and linked into place,
/// which fails when another process linked its id first (then that one is read).
fn instance_id(root: &Path) -> Result<String> {
    let path = root.join(INSTANCE_FILE);
    if let Ok(id) = std::fs::read_to_string(&path)
        && !id.trim().is_empty()
    {
        return Ok(id.trim().to_owned());
    }
    let id = random_id()?;
    let tmp = root.join(format!("{INSTANCE_FILE}.{id}.tmp"));
    crate::owner_only::write(&tmp, id.as_bytes())
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .map_err(io("writing the search index id"))?;
    let linked = std::fs::hard_link(&tmp, &path);
    let outcome = match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let theirs =
                std::fs::read_to_string(&path).map_err(io("reading the search index id"))?;
            if theirs.trim().is_empty() {
                // Left empty by an older docmeta interrupted while writing it.
                std::fs::rename(&tmp, &path)
                    .map_err(io("recording the search index id"))
                    .map(|()| id)
            } else {
                Ok(theirs.trim().to_owned())
            }
        }
        Err(e) => Err(Error::storage("recording the search index id", e)),
    };
    let _ = std::fs::remove_file(&tmp);
    outcome
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
    crate::owner_only::write(
        &tmp,
        format!("generation {generation}\nschema {schema}\n").as_bytes(),
    )
    .map_err(io("writing the search index pointer"))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io("syncing the search index pointer"))?;
    std::fs::rename(&tmp, root.join("CURRENT")).map_err(io("switching the search index"))
}

/// A read-only view of generation `generation`; empty when another docmeta's schema built it
/// (this build's fields would misread it; its writer rebuilds it on `search_upgrade`).
fn view(root: &Path, generation: u64, schema: u32) -> Result<SearchIndex> {
    if schema == INDEX_SCHEMA_VERSION {
        SearchIndex::open_read_only(&root.join(generation.to_string()))
    } else {
        SearchIndex::empty_read_only()
    }
}

impl SearchHome {
    /// Opens the index under `root`, or one in memory. With `take_writer`, takes the index
    /// writer if no other process holds it; otherwise the index is a read-only view until
    /// [`writable`](Self::writable) takes the writer.
    pub(crate) fn open(root: Option<&Path>, take_writer: bool) -> Result<SearchHome> {
        let Some(root) = root else {
            return Ok(SearchHome {
                root: None,
                current: RwLock::new(Arc::new(SearchIndex::in_memory()?)),
                generation: Mutex::new(1),
                schema: RwLock::new(INDEX_SCHEMA_VERSION),
                instance: random_id()?,
                writer_lock: Mutex::new(None),
            });
        };
        crate::owner_only::create_dir_all(root).map_err(io("creating the search directory"))?;
        let writer_lock = if take_writer {
            take_writer_lock(root)?
        } else {
            None
        };
        let (generation, schema, index) = if writer_lock.is_some() {
            let (generation, schema) = prepare_for_writing(root)?;
            let index = SearchIndex::open(&root.join(generation.to_string()))?;
            (generation, schema, index)
        } else {
            let (generation, schema) = read_current(root).unwrap_or((0, INDEX_SCHEMA_VERSION));
            (generation, schema, view(root, generation, schema)?)
        };
        let instance = instance_id(root)?;
        Ok(SearchHome {
            instance,
            root: Some(root.to_path_buf()),
            current: RwLock::new(Arc::new(index)),
            generation: Mutex::new(generation),
            schema: RwLock::new(schema),
            writer_lock: Mutex::new(writer_lock),
        })
    }

    /// The index with its writer, taking the writer now if no other process holds it (then
    /// this process keeps it until it closes); `None` while another process holds it: that
    /// process writes the index, this one only reads it.
    pub(crate) fn writable(&self) -> Result<Option<Arc<SearchIndex>>> {
        let Some(root) = &self.root else {
            return Ok(Some(self.current.read().clone()));
        };
        let mut lock = self.writer_lock.lock();
        if lock.is_some() {
            return Ok(Some(self.current.read().clone()));
        }
        let Some(file) = take_writer_lock(root)? else {
            return Ok(None);
        };
        let (generation, schema) = prepare_for_writing(root)?;
        let index = Arc::new(SearchIndex::open(&root.join(generation.to_string()))?);
        *self.generation.lock() = generation;
        *self.schema.write() = schema;
        *self.current.write() = index.clone();
        *lock = Some(file);
        Ok(Some(index))
    }

    /// Whether this process holds the index writer.
    pub(crate) fn holds_writer(&self) -> bool {
        self.root.is_none() || self.writer_lock.lock().is_some()
    }

    /// The id of the process holding the index writer, when another one does.
    pub(crate) fn writer_pid(&self) -> Option<u32> {
        if self.holds_writer() {
            return None;
        }
        let root = self.root.as_ref()?;
        std::fs::read_to_string(root.join(WRITER_FILE))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// This index's identity among the processes sharing a database.
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    /// The index in use. A read-only view first follows its writer: the generation it swapped
    /// in, and its latest commit.
    pub(crate) fn index(&self) -> Arc<SearchIndex> {
        if !self.holds_writer() {
            self.follow_writer();
        }
        self.current.read().clone()
    }

    /// A read-only view: opens the generation its writer swapped in, or sees its new commits.
    fn follow_writer(&self) {
        let Some(root) = &self.root else { return };
        let mut generation = self.generation.lock();
        match read_current(root) {
            Some((g, schema)) if g != *generation => {
                if let Ok(index) = view(root, g, schema) {
                    *self.current.write() = Arc::new(index);
                    *self.schema.write() = schema;
                    *generation = g;
                }
            }
            Some((_, schema)) => {
                *self.schema.write() = schema;
                // A failed reload leaves the last view (retried at the next search).
                let _ = self.current.read().refresh();
            }
            None => {}
        }
    }

    /// The schema version of the index in use, and whether it is this build's.
    pub(crate) fn schema(&self) -> (u32, bool) {
        if !self.holds_writer() {
            self.follow_writer();
        }
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
