//! Security regression tests: each test reproduces one attack on a running
//! `docmeta serve` over HTTP (black-box) and checks it is refused. One file per theme.

mod support;

#[path = "security/authority.rs"]
mod authority;
#[path = "security/backup_files.rs"]
mod backup_files;
#[path = "security/connections.rs"]
mod connections;
#[path = "security/escalation.rs"]
mod escalation;
#[path = "security/forms.rs"]
mod forms;
#[path = "security/http_edges.rs"]
mod http_edges;
#[path = "security/leaks.rs"]
mod leaks;
#[path = "security/reach.rs"]
mod reach;
#[path = "security/renders.rs"]
mod renders;
#[path = "security/search.rs"]
mod search;
#[path = "security/streaming.rs"]
mod streaming;
#[path = "security/templates.rs"]
mod templates;
