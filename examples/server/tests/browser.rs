//! The web interface in a real browser: headless Chromium (Debian's `chromium`) driven by
//! `playwright-core` (npm, pinned in `scripts/pins/browser/`) against a running `docmeta serve`
//! with the demo loaded. The steps live in `examples/server/ui/tests/run.mjs`: sign in, search,
//! sort and page, edit a value through a lookup drop-down, a refusal shown beside its field, an
//! XSS payload rendered inert, a document appearing after a grant and gone after the revoke,
//! live updates, the administration and ACL pages with `explain`, sign-out, accessibility
//! (axe-core: no serious or critical violation) and the assets' size. A screenshot of each page
//! is saved under `target/ui-screenshots/`.
//!
//! Needs Node.js, `/usr/bin/chromium` (or `DOCMETA_CHROMIUM`) and the pinned tools in
//! `target/browser-tools` (or `DOCMETA_BROWSER_TOOLS`), which `.ci/run` installs; without them
//! the test says so and passes, unless `DOCMETA_REQUIRE_BROWSER=1` (as in CI) makes it fail.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::{ADMIN, Server, prepare};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the browser test needs, or why it cannot run.
fn tools() -> Result<(PathBuf, PathBuf), String> {
    let tools = std::env::var_os("DOCMETA_BROWSER_TOOLS")
        .map_or_else(|| workspace().join("target/browser-tools"), PathBuf::from);
    let chromium = std::env::var_os("DOCMETA_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if !tools.join("node_modules/playwright-core").is_dir()
        || !tools.join("node_modules/axe-core").is_dir()
    {
        return Err(format!(
            "no playwright-core and axe-core in {} (see scripts/pins/browser/)",
            tools.display()
        ));
    }
    if !chromium.is_file() {
        return Err(format!("no Chromium at {}", chromium.display()));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Err("no node on PATH".into());
    }
    Ok((tools, chromium))
}

#[test]
fn the_web_interface_works_in_a_real_browser() {
    let (tools, chromium) = match tools() {
        Ok(found) => found,
        Err(why) if std::env::var("DOCMETA_REQUIRE_BROWSER").as_deref() == Ok("1") => {
            panic!("the browser test is required but cannot run: {why}")
        }
        Err(why) => {
            eprintln!("skipped: the browser test cannot run here: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let server = Server::start(dir.path());
    let shots = workspace().join("target/ui-screenshots");
    std::fs::create_dir_all(&shots).expect("screenshot directory");
    let mut child = Command::new("node")
        .arg(workspace().join("examples/server/ui/tests/run.mjs"))
        .env("DOCMETA_URL", &server.base)
        .env("DOCMETA_ADMIN_USER", ADMIN.0)
        .env("DOCMETA_ADMIN_PASSWORD", ADMIN.1)
        .env("DOCMETA_SCREENSHOTS", &shots)
        .env("DOCMETA_BROWSER_TOOLS", &tools)
        .env("DOCMETA_CHROMIUM", &chromium)
        .spawn()
        .expect("run node");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for node") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("the browser test took more than 300 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "the browser test failed ({status}); see its output above"
    );
}
