//! Document files (api.md "Files"): upload as multipart `file`, list, detail, delete, and a
//! download that streams the original bytes.
//!
//! No blocking thread ever waits on a client: the server has few of them,
//! and a handful of clients that stop sending or reading would otherwise hold them all. An
//! upload is received asynchronously into a spool (memory up to `SPOOL_IN_MEMORY`, then a file
//! of the data directory's `.spool/`, written chunk by chunk on the blocking pool) and stored
//! once complete; a download is read from the storage (decrypting MENC) one chunk at a time on
//! the blocking pool, only when the client has taken the previous one. Both are bounded by
//! `stream_idle_timeout_ms` and `stream_total_timeout_ms` and counted against the user's
//! `streams_per_user`.

use std::collections::HashMap;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::body::Json;
use axum::body::Bytes;
use axum::extract::multipart::{Field, MultipartError};
use axum::extract::{FromRequest, Multipart, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use docmeta_core::{DocumentFile, DocumentFileId, DocumentId};
use futures_util::StreamExt as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::MAX_BODY;
use crate::conn::{DeadlineGuard, MaybeConn};
use crate::dto::{DocumentFileOut, PageOut};
use crate::error::{ApiError, ApiResult};
use crate::page::{ListQuery, Page};
use crate::state::{AppState, CurrentUser, Ids};
use crate::streams::{StreamLimits, StreamPermit};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_files, upload_file))
        .routes(routes!(get_file, delete_file))
        .routes(routes!(download_file))
}

/// The unit of disk reads and writes of streamed files (and the largest upload kept in memory).
const CHUNK: usize = 256 * 1024;
/// Uploads up to this size are spooled in memory; larger ones go to a file.
const SPOOL_IN_MEMORY: usize = CHUNK;
/// The directory of the data directory where uploads are spooled.
pub const SPOOL_DIR: &str = ".spool";

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/files/", tag = "files",
    params(crate::page::PageParams, ("document_id" = i64, Path)),
    responses((status = 200, body = PageOut), (status = 404, body = crate::dto::ErrorOut)))]
async fn list_files(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<DocumentFileOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let files = s.files(DocumentId(id))?;
        q.page(&uri, docmeta_core::Page::of(files, q.request()), |x| {
            DocumentFileOut::from(&x)
        })
    })
    .await
}

/// The multipart form of an upload (for the OpenAPI description).
#[derive(utoipa::ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)] // Other parts are read and dropped: left out of the description.
#[allow(dead_code)]
pub(crate) struct UploadForm {
    /// The file.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

#[utoipa::path(post, path = "/api/v4/documents/{document_id}/files/", tag = "files",
    params(("document_id" = i64, Path)),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, body = DocumentFileOut), (status = 400, body = crate::dto::ErrorOut),
        (status = 403, body = crate::dto::ErrorOut), (status = 404, body = crate::dto::ErrorOut),
        (status = 413, body = crate::dto::ErrorOut), (status = 507, body = crate::dto::ErrorOut)))]
async fn upload_file(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    request: Request,
) -> ApiResult<(StatusCode, Json<DocumentFileOut>)> {
    let _permit: StreamPermit = app.streams.start(user)?;
    let limits = app.streams.limits();
    let deadline = limits.deadline();
    // Refused before a byte is received, as the core would refuse after.
    app.run(user, move |s| Ok(s.check_add_file(DocumentId(id))?))
        .await?;
    let (filename, spooled) = receive_upload(request, &app, limits, deadline).await?;
    let file = app
        .run(user, move |s| {
            let mut content = spooled.reader().map_err(|e| {
                ApiError::from(docmeta_core::Error::storage("reading a spooled upload", e))
            })?;
            Ok(s.add_file(DocumentId(id), &filename, &mut content)?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(DocumentFileOut::from(&file))))
}

/// The part named `file` of an upload's multipart form, received whole (its name and its
/// content); the parts before it (ignored) are bounded as a document form's fields are. Call it
/// once the caller's permission is checked. No such part is a `400` on `file`.
pub(crate) async fn receive_upload(
    request: Request,
    app: &AppState,
    limits: StreamLimits,
    deadline: Instant,
) -> ApiResult<(String, Spooled)> {
    let gate = FormGate::new();
    let mut form = gate.form(request, app, "file").await?;
    while let Some(mut field) = within(limits, deadline, form.next_field())
        .await?
        .map_err(|e| gate.error(e))?
    {
        if field.name() != Some("file") {
            continue;
        }
        gate.open();
        let filename = field.file_name().unwrap_or("file").to_owned();
        let spooled = receive(&app.spool_dir, &mut field, limits, deadline).await?;
        return Ok((filename, spooled));
    }
    Err(ApiError::field(
        "file",
        "No file was submitted (a multipart field named \"file\").",
    ))
}

/// The most bytes of a form read before its permission is checked: its text fields (at most
/// [`MAX_BODY`] together, as a JSON body), the framing of its parts and the headers of its file
/// part.
pub const FORM_BEFORE_CHECK: u64 = 2 * MAX_BODY as u64;

/// Counts the bytes of a form as they are read, failing the body once they pass `limit` (so that
/// the multipart parser never buffers more: a part's headers, a text field), and tells the
/// handler it did. The handler raises the limit once the caller's permission is checked.
#[derive(Debug)]
pub(crate) struct FormGate {
    limit: AtomicU64,
    tripped: AtomicBool,
}

impl FormGate {
    pub(crate) fn new() -> Arc<FormGate> {
        Arc::new(FormGate {
            limit: AtomicU64::new(FORM_BEFORE_CHECK),
            tripped: AtomicBool::new(false),
        })
    }

    /// The multipart form of `request`, read through the gate; a body that is not multipart (or
    /// has no boundary) is a JSON error naming `field`, like every other.
    pub(crate) async fn form(
        self: &Arc<FormGate>,
        request: Request,
        state: &AppState,
        field: &str,
    ) -> ApiResult<Multipart> {
        Multipart::from_request(self.guard(request), state)
            .await
            .map_err(|e| ApiError::new(e.status(), serde_json::json!({ field: [e.body_text()] })))
    }

    /// Lifts the limit: the caller may send the file (`upload_max_bytes` still bounds it).
    pub(crate) fn open(&self) {
        self.limit.store(u64::MAX, Ordering::SeqCst);
    }

    /// `request` with a body that fails past the gate's limit.
    fn guard(self: &Arc<FormGate>, request: Request) -> Request {
        let gate = self.clone();
        request.map(|body| {
            let mut read = 0u64;
            axum::body::Body::from_stream(body.into_data_stream().map(move |chunk| {
                let chunk = chunk?;
                read = read.saturating_add(chunk.len() as u64);
                if read > gate.limit.load(Ordering::SeqCst) {
                    gate.tripped.store(true, Ordering::SeqCst);
                    return Err(axum::Error::new(std::io::Error::other(
                        "the form is larger than it may be before its permission check",
                    )));
                }
                Ok(chunk)
            }))
        })
    }

    /// The error of a form whose reading failed: `413` when the gate stopped it.
    pub(crate) fn error(&self, e: MultipartError) -> ApiError {
        if self.tripped.load(Ordering::SeqCst) {
            return ApiError::detail(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "The form's fields before its file are larger than {FORM_BEFORE_CHECK} bytes."
                ),
            );
        }
        multipart_error(e)
    }
}

/// Awaits `step` of an upload: `408` when the client sent nothing for the idle limit, or the
/// upload as a whole passed its deadline.
pub(crate) async fn within<T>(
    limits: StreamLimits,
    deadline: Instant,
    step: impl Future<Output = T>,
) -> ApiResult<T> {
    let idle_end = Instant::now() + limits.idle;
    let timed_out = || {
        ApiError::detail(
            StatusCode::REQUEST_TIMEOUT,
            "The upload was too slow: the client stopped sending or took too long.",
        )
    };
    tokio::time::timeout_at(idle_end.min(deadline).into(), step)
        .await
        .map_err(|_| timed_out())
}

/// A multipart error: `413` past the size limit, `400` for a malformed or cut-off body (never
/// `500`: the client's body is at fault, not the server).
pub(crate) fn multipart_error(e: MultipartError) -> ApiError {
    let status = e.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(status, serde_json::json!({ "file": [e.body_text()] }));
    }
    let message = if status.is_server_error() {
        "The request body ended before the upload was complete.".to_owned()
    } else {
        e.body_text()
    };
    ApiError::field("file", message)
}

/// An upload received whole, in memory or in a spool file.
pub(crate) enum Spooled {
    Memory(Vec<u8>),
    File(SpoolFile),
}

impl Spooled {
    /// The content, from its start (blocking: call on the blocking pool).
    pub(crate) fn reader(self) -> io::Result<Box<dyn Read + Send>> {
        match self {
            Spooled::Memory(bytes) => Ok(Box::new(io::Cursor::new(bytes))),
            Spooled::File(mut spool) => {
                let mut file = spool
                    .file
                    .take()
                    .ok_or_else(|| io::Error::other("no spool"))?;
                file.flush()?;
                file.rewind()?;
                Ok(Box::new(SpoolReader {
                    file: io::BufReader::with_capacity(CHUNK, file),
                    _spool: spool,
                }))
            }
        }
    }
}

/// A spool file, removed when dropped (the upload stored, refused or abandoned).
pub(crate) struct SpoolFile {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Drop for SpoolFile {
    fn drop(&mut self) {
        self.file = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads a spool file, removing it when done.
struct SpoolReader {
    file: io::BufReader<std::fs::File>,
    _spool: SpoolFile,
}

impl Read for SpoolReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

/// Runs blocking file work on the blocking pool (short: local disk, never the client).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "a blocking task failed");
            ApiError::internal()
        })?
        .map_err(|e| ApiError::from(docmeta_core::Error::storage("spooling an upload", e)))
}

/// Receives the field's bytes into a spool, under the stream limits.
pub(crate) async fn receive(
    dir: &Path,
    field: &mut Field<'_>,
    limits: StreamLimits,
    deadline: Instant,
) -> ApiResult<Spooled> {
    let mut pending: Vec<u8> = Vec::new();
    let mut spool: Option<SpoolFile> = None;
    while let Some(chunk) = within(limits, deadline, field.chunk())
        .await?
        .map_err(multipart_error)?
    {
        pending.extend_from_slice(&chunk);
        if pending.len() < SPOOL_IN_MEMORY {
            continue;
        }
        let mut current = match spool.take() {
            Some(spool) => spool,
            None => {
                let dir = dir.to_path_buf();
                blocking(move || create_spool(&dir)).await?
            }
        };
        let bytes = std::mem::take(&mut pending);
        spool = Some(
            blocking(move || {
                if let Some(file) = current.file.as_mut() {
                    file.write_all(&bytes)?;
                }
                Ok(current)
            })
            .await?,
        );
    }
    match spool {
        None => Ok(Spooled::Memory(pending)),
        Some(mut current) => {
            let current = blocking(move || {
                if let Some(file) = current.file.as_mut() {
                    file.write_all(&pending)?;
                }
                Ok(current)
            })
            .await?;
            Ok(Spooled::File(current))
        }
    }
}

/// A new spool file in `dir` (created with the directory): `0600` in a `0700` directory, since
/// an upload holds a document's bytes.
fn create_spool(dir: &Path) -> io::Result<SpoolFile> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)?;
    let mut suffix = [0u8; 12];
    getrandom::fill(&mut suffix).map_err(|e| io::Error::other(e.to_string()))?;
    let name: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("upload-{name}"));
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(&path)?;
    Ok(SpoolFile {
        path,
        file: Some(file),
    })
}

/// Removes spool files a crash left (untouched for an hour: an upload in progress writes its
/// file continuously and is cut after `stream_idle_timeout_ms`).
pub fn clean_spool(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = (entry.metadata().and_then(|m| m.modified()).ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600));
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/files/{file_id}/", tag = "files",
    params(("document_id" = i64, Path), ("file_id" = i64, Path)),
    responses((status = 200, body = DocumentFileOut), (status = 404, body = crate::dto::ErrorOut)))]
async fn get_file(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, file)): Ids<(i64, i64)>,
) -> ApiResult<Json<DocumentFileOut>> {
    app.run(user, move |s| {
        let f = file_of(s, document, file)?;
        Ok(Json(DocumentFileOut::from(&f)))
    })
    .await
}

fn file_of(s: &docmeta_core::Session, document: i64, file: i64) -> ApiResult<DocumentFile> {
    let f = s.file(DocumentFileId(file))?;
    if f.document_id != DocumentId(document) {
        return Err(ApiError::not_found());
    }
    Ok(f)
}

#[utoipa::path(delete, path = "/api/v4/documents/{document_id}/files/{file_id}/", tag = "files",
    params(("document_id" = i64, Path), ("file_id" = i64, Path)),
    responses((status = 204), (status = 403, body = crate::dto::ErrorOut), (status = 404, body = crate::dto::ErrorOut)))]
async fn delete_file(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, file)): Ids<(i64, i64)>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        let f = file_of(s, document, file)?;
        s.delete_file(f.id)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/files/{file_id}/download/", tag = "files",
    params(("document_id" = i64, Path), ("file_id" = i64, Path)),
    responses((status = 200, description = "The file's original bytes. A stored file found damaged while it streams (a later MENC chunk failing authentication, a checksum mismatch at its end) breaks the transfer off short of its Content-Length; the server logs the file id", content_type = "*/*"),
        (status = 404, body = crate::dto::ErrorOut),
        (status = 500, description = "The stored file is damaged (missing, wrong checksum, failed authentication) and was not served; the server logs the file id. Files up to download_verify_max_bytes are checked whole, larger encrypted ones by their first chunk, before the answer starts", body = crate::dto::ErrorOut)))]
async fn download_file(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    MaybeConn(conn): MaybeConn,
    Ids((document, file)): Ids<(i64, i64)>,
) -> ApiResult<Response> {
    let permit = app.streams.start(user)?;
    let (f, content) = app
        .run(user, move |s| {
            let f = file_of(s, document, file)?;
            Ok(s.open_file(f.id)?)
        })
        .await?;
    let deadline = app.streams.limits().deadline();
    let download = Download {
        content: Box::new(content),
        file: f.id.0,
        deadline,
        // Writes to a client that stops reading fail after the idle limit (`conn`); this one
        // also ends at the stream's deadline.
        _deadline: conn.map(|c| c.deadline(deadline)),
        _permit: permit,
    };
    let stream =
        futures_util::stream::unfold(
            Some(download),
            |state| async move { next_chunk(state?).await },
        );
    let mut response = axum::body::Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    let content_type = HeaderValue::from_str(&f.mimetype)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CONTENT_TYPE, content_type);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(f.size));
    if let Ok(v) = HeaderValue::from_str(&content_disposition(&f.filename)) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}

/// A download in progress; dropping it (done, failed, or the client gone) closes the file and
/// frees the user's stream.
struct Download {
    content: Box<dyn Read + Send>,
    file: i64,
    deadline: Instant,
    _deadline: Option<DeadlineGuard>,
    _permit: StreamPermit,
}

/// Reads the next chunk on the blocking pool: one read of at most `CHUNK` bytes, never a wait
/// for the client. An error aborts the response: a damaged or undecryptable file (or one
/// past its deadline) never arrives whole.
async fn next_chunk(mut download: Download) -> Option<(io::Result<Bytes>, Option<Download>)> {
    if Instant::now() >= download.deadline {
        tracing::warn!(
            file = download.file,
            "download cut: it took longer than allowed"
        );
        return Some((
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the download took too long",
            )),
            None,
        ));
    }
    let read = tokio::task::spawn_blocking(move || {
        let mut buf = vec![0u8; CHUNK];
        let result = loop {
            match download.content.read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        (download, buf, result)
    })
    .await;
    match read {
        Ok((download, mut buf, Ok(n))) if n > 0 => {
            buf.truncate(n);
            Some((Ok(Bytes::from(buf)), Some(download)))
        }
        // The end: the content's checksum matched (FileContent fails its last read otherwise).
        Ok((_, _, Ok(_))) => None,
        Ok((download, _, Err(e))) => {
            tracing::error!(error = %e, file = download.file, "download failed");
            Some((Err(e), None))
        }
        Err(e) => {
            tracing::error!(error = %e, "a download's read task failed");
            Some((Err(io::Error::other(e.to_string())), None))
        }
    }
}

/// `attachment` with an ASCII fallback name and the exact name percent-encoded (RFC 6266).
fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}
