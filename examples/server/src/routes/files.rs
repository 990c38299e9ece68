//! Document files (api.md "Files"): upload as multipart `file`, list, detail, delete, and a
//! download that streams the original bytes. Uploads stream into the file storage on a
//! blocking thread through a bounded channel, so memory use does not grow with the file size.

use std::io::{self, Read};

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Multipart, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use docmeta_core::{DocumentFile, DocumentFileId, DocumentId};
use tokio::sync::mpsc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::app::{AppState, Ids};
use crate::auth::CurrentUser;
use crate::dto::DocumentFileOut;
use crate::error::{ApiError, ApiResult};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_files, upload_file))
        .routes(routes!(get_file, delete_file))
        .routes(routes!(download_file))
}

/// Reads the chunks an async task sends; an `Err` chunk (the client went away) fails the read.
struct ChannelReader {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/files/", tag = "files",
    params(("document_id" = i64, Path)),
    responses((status = 200, body = Vec<DocumentFileOut>), (status = 404, body = crate::dto::ErrorOut)))]
async fn list_files(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<Vec<DocumentFileOut>>> {
    app.run(move |db| {
        let files = db.session(user).files(DocumentId(id))?;
        Ok(Json(files.iter().map(DocumentFileOut::from).collect()))
    })
    .await
}

/// The multipart form of an upload (for the OpenAPI description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
struct UploadForm {
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
    form: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> ApiResult<(StatusCode, Json<DocumentFileOut>)> {
    let bad = |m: &str| ApiError::field("file", m);
    // A body that is not multipart (or has no boundary) is a JSON error like every other.
    let mut form = form
        .map_err(|e| ApiError::new(e.status(), serde_json::json!({ "file": [e.body_text()] })))?;
    let multipart_error = |e: axum::extract::multipart::MultipartError| {
        ApiError::new(e.status(), serde_json::json!({ "file": [e.body_text()] }))
    };
    while let Some(mut field) = form.next_field().await.map_err(multipart_error)? {
        if field.name() != Some("file") {
            continue;
        }
        let filename = field.file_name().unwrap_or("file").to_owned();
        let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(8);
        let stored = app.run(move |db| {
            let mut reader = ChannelReader {
                rx,
                current: Bytes::new(),
            };
            Ok(db
                .session(user)
                .add_file(DocumentId(id), &filename, &mut reader)?)
        });
        let feed = async move {
            loop {
                let item = match field.chunk().await {
                    Ok(Some(chunk)) => Ok(chunk),
                    Ok(None) => break,
                    Err(e) => Err(io::Error::other(e.to_string())),
                };
                let failed = item.is_err();
                // The reader is gone when the core refused early (permission, full disk).
                if tx.send(item).await.is_err() || failed {
                    break;
                }
            }
        };
        let (stored, ()) = tokio::join!(stored, feed);
        let file = stored?;
        return Ok((StatusCode::CREATED, Json(DocumentFileOut::from(&file))));
    }
    Err(bad(
        "No file was submitted (a multipart field named \"file\").",
    ))
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/files/{file_id}/", tag = "files",
    params(("document_id" = i64, Path), ("file_id" = i64, Path)),
    responses((status = 200, body = DocumentFileOut), (status = 404, body = crate::dto::ErrorOut)))]
async fn get_file(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, file)): Ids<(i64, i64)>,
) -> ApiResult<Json<DocumentFileOut>> {
    app.run(move |db| {
        let f = file_of(&db.session(user), document, file)?;
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
    app.run(move |db| {
        let s = db.session(user);
        let f = file_of(&s, document, file)?;
        s.delete_file(f.id)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/files/{file_id}/download/", tag = "files",
    params(("document_id" = i64, Path), ("file_id" = i64, Path)),
    responses((status = 200, description = "The file's original bytes", content_type = "*/*"),
        (status = 404, body = crate::dto::ErrorOut)))]
async fn download_file(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, file)): Ids<(i64, i64)>,
) -> ApiResult<Response> {
    let (f, mut content) = app
        .run(move |db| {
            let s = db.session(user);
            let f = file_of(&s, document, file)?;
            Ok(s.open_file(f.id)?)
        })
        .await?;
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(4);
    tokio::task::spawn_blocking(move || {
        loop {
            let mut buf = vec![0u8; 256 * 1024];
            match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.blocking_send(Ok(Bytes::from(buf))).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    // Aborts the response: a damaged or undecryptable file never arrives whole.
                    tracing::error!(error = %e, file = f.id.0, "download failed");
                    let _ = tx.blocking_send(Err(e));
                    break;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
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
