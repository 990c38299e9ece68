//! The operational commands of the `docmeta` binary: migrate, user, schema, demo, and
//! graceful shutdown of `serve`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn docmeta(dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_docmeta"));
    c.env("DOCMETA_DATA", dir).env("DOCMETA_LOG", "warn");
    c
}

fn cheap_hashing(dir: &std::path::Path) {
    std::fs::write(
        dir.join("config.yml"),
        "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n",
    )
    .expect("config");
}

fn output(c: &mut Command) -> (bool, String) {
    let out = c.output().expect("run docmeta");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn migrate_users_schema_and_demo() {
    let dir = tempfile::tempdir().expect("tempdir");
    cheap_hashing(dir.path());
    let (ok, text) = output(docmeta(dir.path()).arg("migrate"));
    let current = format!("schema version {}", docmeta_core::store::SCHEMA_VERSION);
    assert!(ok && text.contains(&current), "{text}");
    let (ok, text) = output(
        docmeta(dir.path())
            .args(["user", "create", "root", "--superuser"])
            .env("DOCMETA_PASSWORD", "a long password"),
    );
    assert!(ok && text.contains("created user 'root'"), "{text}");
    let (ok, text) = output(
        docmeta(dir.path())
            .args(["user", "create", "root"])
            .env("DOCMETA_PASSWORD", "a long password"),
    );
    assert!(!ok && text.contains("already exists"), "{text}");
    let (ok, text) = output(
        docmeta(dir.path())
            .args(["user", "create", "weak"])
            .env("DOCMETA_PASSWORD", "short"),
    );
    assert!(!ok && text.contains("at least 8"), "{text}");
    let mut child = docmeta(dir.path())
        .args(["user", "set-password", "root"])
        .env_remove("DOCMETA_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"another long password\n")
        .expect("write");
    assert!(
        child.wait().expect("wait").success(),
        "set-password from standard input"
    );

    let (ok, text) = output(docmeta(dir.path()).arg("demo"));
    assert!(ok && text.contains("demo loaded"), "{text}");
    let (ok, text) = output(docmeta(dir.path()).arg("demo"));
    assert!(
        ok && text.contains("already loaded"),
        "the demo loads once: {text}"
    );

    let (ok, yaml) = output(docmeta(dir.path()).args(["schema", "export"]));
    assert!(
        ok && yaml.contains("name: invoice_number") && yaml.contains("label: Accountant"),
        "{yaml}"
    );
    let file = dir.path().join("schema.yml");
    std::fs::write(&file, yaml.replace("label: Due date", "label: Payment due"))
        .expect("write schema");
    let (ok, text) = output(
        docmeta(dir.path())
            .args(["schema", "apply", "--dry-run"])
            .arg(&file),
    );
    assert!(
        ok && text.contains("~ metadata type due_date") && text.contains("would make 1 change(s)"),
        "{text}"
    );
    let (ok, text) = output(docmeta(dir.path()).args(["schema", "apply"]).arg(&file));
    assert!(ok && text.contains("made 1 change(s)"), "{text}");
    let (ok, text) = output(docmeta(dir.path()).args(["schema", "apply"]).arg(&file));
    assert!(
        ok && text.contains("made 0 change(s)"),
        "idempotent: {text}"
    );
    std::fs::write(
        &file,
        "metadata_types:\n  - name: 'bad name'\n    label: X\n",
    )
    .expect("write");
    let (ok, text) = output(docmeta(dir.path()).args(["schema", "apply"]).arg(&file));
    assert!(!ok && text.contains("name"), "{text}");
}

#[test]
fn search_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    cheap_hashing(dir.path());
    assert!(output(docmeta(dir.path()).arg("demo")).0);
    let (ok, text) = output(docmeta(dir.path()).args(["search", "reindex"]));
    assert!(ok && text.contains("indexed 8 documents"), "{text}");
    let (ok, text) = output(docmeta(dir.path()).args(["search", "status"]));
    assert!(
        ok && text.contains("documents.document: 8")
            && text.contains("(current)")
            && text.contains("events not yet indexed: 0"),
        "{text}"
    );
    let (ok, text) = output(docmeta(dir.path()).args(["search", "initialize"]));
    assert!(ok, "{text}");
    assert!(
        output(docmeta(dir.path()).args(["search", "status"]))
            .1
            .contains("documents.document: 0")
    );
    let (ok, text) = output(docmeta(dir.path()).args([
        "search",
        "index-objects",
        "--model",
        "documents.document",
        "--ids",
        "1-3,5",
    ]));
    assert!(ok && text.contains("indexed 4 documents"), "{text}");
    let (ok, text) =
        output(docmeta(dir.path()).args(["search", "index-objects", "--model", "nope"]));
    assert!(!ok && text.contains("unknown model"), "{text}");
    let (ok, text) = output(docmeta(dir.path()).args(["search", "upgrade"]));
    assert!(ok && text.contains("is current"), "{text}");
}

#[test]
fn serve_creates_the_administrator_and_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    cheap_hashing(dir.path());
    let mut child = docmeta(dir.path())
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("DOCMETA_ADMIN_PASSWORD")
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("line").expect("line");
    assert!(
        first.contains("created administrator 'admin' with password: "),
        "{first}"
    );
    let password = first.rsplit(' ').next().expect("password").to_owned();
    assert!(password.len() >= 20, "a generated password");
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("docmeta listening on ").map(str::to_owned))
        .expect("listening");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let auth = format!("Basic {}", base64_of(&format!("admin:{password}")));
    let status = agent
        .get(&format!("{address}/api/v4/users/current/"))
        .header("Authorization", &auth)
        .call()
        .expect("call")
        .status();
    assert_eq!(status.as_u16(), 200);
    // Changing the password drops the cached verification at once.
    let body = serde_json::json!({"password": "a brand new password"}).to_string();
    let r = agent
        .patch(&format!("{address}/api/v4/users/1/"))
        .header("Authorization", &auth)
        .header("Content-Type", "application/json")
        .send(body)
        .expect("patch");
    assert_eq!(r.status().as_u16(), 200);
    let status = agent
        .get(&format!("{address}/api/v4/users/current/"))
        .header("Authorization", &auth)
        .call()
        .expect("call")
        .status();
    assert_eq!(status.as_u16(), 401, "the old password no longer works");
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let status = child.wait().expect("wait");
    assert!(
        status.success(),
        "SIGTERM ends the server cleanly: {status}"
    );
}

fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn backup_verify_restore_prune_and_storage_conversion() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data");
    cheap_hashing(&data);
    assert!(output(docmeta(&data).arg("demo")).0);
    let archive = dir.path().join("backups").join("full.tar.zst");
    let (ok, text) = output(docmeta(&data).args(["backup", "--out"]).arg(&archive));
    assert!(ok && text.contains("wrote") && archive.exists(), "{text}");
    let (ok, text) = output(docmeta(&data).args(["backup", "verify"]).arg(&archive));
    assert!(ok && text.contains("every checksum matches"), "{text}");
    let inc = dir.path().join("backups").join("inc.tar.zst");
    let (ok, text) = output(
        docmeta(&data)
            .args(["backup", "--out"])
            .arg(&inc)
            .arg("--since")
            .arg(&archive),
    );
    assert!(ok && text.contains("incremental on backup"), "{text}");
    // Restore into a fresh directory: the report carries the spec's verification.
    let target = dir.path().join("restored");
    let (ok, text) = output(docmeta(&target).arg("restore").arg(&archive).arg(&inc));
    assert!(
        ok && text.contains("documents: 8")
            && text.contains("opens")
            && text.contains("matches its SHA-256")
            && text.contains("search answers: yes")
            && text.contains("search rebuild queued"),
        "{text}"
    );
    // A truncated archive is refused and says why.
    let bytes = std::fs::read(&archive).expect("read");
    let bad = dir.path().join("bad.tar.zst");
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).expect("write");
    let (ok, text) = output(docmeta(&data).args(["backup", "verify"]).arg(&bad));
    assert!(!ok && text.contains("backup archive"), "{text}");
    let (ok, text) = output(
        docmeta(&data)
            .args([
                "backup",
                "prune",
                "--keep-daily",
                "1",
                "--keep-weekly",
                "1",
                "--dry-run",
                "--dir",
            ])
            .arg(dir.path().join("backups")),
    );
    assert!(ok && text.contains("keep"), "{text}");
    // Encrypt the store with a password from the environment, then read it back.
    std::fs::write(
        data.join("config.yml"),
        "password_hash_memory_kib: 64\npassword_hash_iterations: 1\nstorage_kdf_memory_kib: 64\nstorage_kdf_iterations: 1\ndocuments_file_storage_backend: encrypted\n",
    )
    .expect("config");
    let (ok, text) = output(docmeta(&data).args(["storage", "encrypt"]));
    assert!(!ok && text.contains("DOCMETA_STORAGE_PASSWORD"), "{text}");
    let (ok, text) = output(
        docmeta(&data)
            .env("DOCMETA_STORAGE_PASSWORD", "pw")
            .args(["storage", "encrypt"]),
    );
    assert!(ok && text.contains("encrypted"), "{text}");
    let (ok, text) = output(
        docmeta(&data)
            .env("DOCMETA_STORAGE_PASSWORD", "wrong")
            .args(["search", "status"]),
    );
    assert!(!ok && text.contains("password does not match"), "{text}");
}

/// A data directory with the demo loaded (whose documents have files).
fn demo_data(dir: &std::path::Path) -> std::path::PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("data");
    cheap_hashing(&data);
    assert!(output(docmeta(&data).arg("demo")).0, "demo");
    data
}

/// Flips a byte in the middle of one stored document file, as a failing disk would.
fn damage_one_stored_file(data: &std::path::Path) {
    let root = data.join("document_file_storage");
    let path = std::fs::read_dir(&root)
        .expect("storage")
        .flatten()
        .filter(|fan| !fan.file_name().to_string_lossy().starts_with('.'))
        .flat_map(|fan| std::fs::read_dir(fan.path()).expect("fan-out").flatten())
        .map(|f| f.path())
        .next()
        .expect("a stored file");
    let mut bytes = std::fs::read(&path).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&path, bytes).expect("write");
}

/// Exit status and both outputs.
fn status_and_output(c: &mut Command) -> (Option<i32>, String) {
    let out = c.output().expect("run docmeta");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn storage_verify_of_an_intact_store_says_so_and_succeeds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = demo_data(dir.path());
    let (code, text) = status_and_output(docmeta(&data).args(["storage", "verify"]));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("all intact") && !text.contains("DAMAGED"),
        "{text}"
    );
}

#[test]
fn storage_verify_lists_a_damaged_file_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = demo_data(dir.path());
    damage_one_stored_file(&data);
    let (code, text) = status_and_output(docmeta(&data).args(["storage", "verify"]));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("DAMAGED document file")
            && text.contains("wrong checksum")
            && text.contains("1 damaged"),
        "{text}"
    );
}

#[test]
fn a_backup_with_a_damaged_file_is_written_lists_it_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = demo_data(dir.path());
    damage_one_stored_file(&data);
    let archive = dir.path().join("full.tar.zst");
    let (code, text) = status_and_output(docmeta(&data).args(["backup", "--out"]).arg(&archive));
    assert_eq!(code, Some(1), "{text}");
    assert!(archive.exists(), "the other files are backed up: {text}");
    assert!(
        text.contains("DAMAGED document file") && text.contains("could not be read intact"),
        "{text}"
    );
}

#[test]
fn backup_verify_lists_the_files_damaged_when_the_backup_was_made_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = demo_data(dir.path());
    damage_one_stored_file(&data);
    let archive = dir.path().join("full.tar.zst");
    status_and_output(docmeta(&data).args(["backup", "--out"]).arg(&archive));
    let (code, text) = status_and_output(docmeta(&data).args(["backup", "verify"]).arg(&archive));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("DAMAGED document file") && text.contains("were damaged"),
        "{text}"
    );
}

#[test]
fn restore_reports_the_files_damaged_when_the_backup_was_made() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = demo_data(dir.path());
    damage_one_stored_file(&data);
    let archive = dir.path().join("full.tar.zst");
    status_and_output(docmeta(&data).args(["backup", "--out"]).arg(&archive));
    let target = dir.path().join("restored");
    let (code, text) = status_and_output(docmeta(&target).arg("restore").arg(&archive));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("matches its SHA-256")
            && text.contains("1 document files were damaged")
            && text.contains("DAMAGED document file"),
        "{text}"
    );
}
