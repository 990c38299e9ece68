//! The store conformance suite on SQLite, in memory and on a file.

use docmeta_core::store::{Dialect, Mode, Store, Transaction};
use docmeta_core::{Result, SqliteStore};

/// A SQLite file store that owns its temporary directory.
struct FileStore {
    store: SqliteStore,
    _dir: tempfile::TempDir,
}

impl Store for FileStore {
    fn begin(&self, mode: Mode) -> Result<Box<dyn Transaction + '_>> {
        self.store.begin(mode)
    }
    fn begin_unit(&self) -> Result<Box<dyn Transaction + '_>> {
        self.store.begin_unit()
    }
    fn dialect(&self) -> Dialect {
        self.store.dialect()
    }
    fn migrate(&self) -> Result<Vec<u32>> {
        self.store.migrate()
    }
    fn schema_version(&self) -> Result<(u32, u32)> {
        self.store.schema_version()
    }
    fn describe(&self) -> String {
        self.store.describe()
    }
}

fn memory() -> Box<dyn Store> {
    Box::new(SqliteStore::in_memory().expect("in-memory SQLite"))
}

fn file() -> Box<dyn Store> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(dir.path().join("db.sqlite3")).expect("SQLite file");
    Box::new(FileStore { store, _dir: dir })
}

docmeta_core::store_conformance_tests!(sqlite_memory, memory);
docmeta_core::store_conformance_tests!(sqlite_file, file);

#[test]
fn a_newer_schema_is_refused() -> Result<()> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("db.sqlite3");
    drop(SqliteStore::open(&path)?);
    let conn = rusqlite_free_update(&path);
    assert!(conn.is_ok());
    let err = SqliteStore::open(&path).expect_err("newer schema");
    assert!(err.to_string().contains("newer than this docmeta"), "{err}");
    Ok(())
}

/// Bumps the recorded schema version through the store's own SQL interface.
fn rusqlite_free_update(path: &std::path::Path) -> Result<()> {
    let store = SqliteStore::open(path)?;
    let mut tx = store.begin(Mode::Write)?;
    tx.execute("INSERT INTO schema_version (version) VALUES (999)", &[])?;
    tx.commit()
}
