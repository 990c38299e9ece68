//! Document files on S3-compatible object storage (`documents_file_storage_location:
//! s3://bucket/prefix`), through the Apache Arrow `object_store` client.
//!
//! [`FileStorage`] is synchronous and is called from plain threads and from an async runtime's
//! blocking pool; `object_store` is async. The storage owns a small tokio runtime of its own:
//! every request is spawned onto it and the caller waits on a channel, which is safe from any
//! thread (a `Runtime::block_on` inside another runtime's context would panic).
//!
//! Everything streams: an upload larger than one part goes up as a multipart upload, a few
//! parts in flight, and a download is handed out batch by batch while the next is fetched.
//! Memory use is bounded by the part size, never by the file size. An S3 put and a completed
//! multipart upload are atomic, so a name only becomes visible once its bytes are complete; a
//! failed multipart upload is aborted.
//!
//! Credentials, endpoint and region come from the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, `AWS_DEFAULT_REGION`, `AWS_ALLOW_HTTP`, ...).
//!
//! Part of `files` (layer 4): imports only `error`.

use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path;
use object_store::{ClientConfigKey, ObjectStore, PutPayload, RetryConfig};

use super::{FileStorage, check_name, generate_name};
use crate::error::{Error, Result};

/// The size of one part of a multipart upload (S3 wants at least 5 MiB but for the last); a
/// file up to this size is stored with one plain put.
const PART: usize = 8 << 20;
/// Parts of one upload in flight at once: the memory an upload holds is about this many parts.
const PARTS_IN_FLIGHT: usize = 3;
/// A download is fetched in batches of about this many bytes, one batch ahead of the reader.
const BATCH: usize = 1 << 20;
/// Deleted files are kept aside this long, so a backup whose database snapshot still
/// references them finds them (as in the directory storage).
const DELETED_KEPT: Duration = Duration::from_secs(24 * 3600);
/// The key prefix, inside the storage's prefix, where deleted files wait.
const DELETED: &str = ".deleted";

/// The scheme of an S3 storage location.
pub const SCHEME: &str = "s3://";

/// Where in object storage the files are: a bucket and a key prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    /// The bucket.
    pub bucket: String,
    /// The key prefix, without leading or trailing slashes; empty for the bucket's root.
    pub prefix: String,
}

impl S3Location {
    /// Parses `s3://bucket` or `s3://bucket/prefix`.
    pub fn parse(location: &str) -> Result<S3Location> {
        let invalid = |why: &str| {
            Error::InvalidInput(format!(
                "file storage location {location:?}: {why} (expected s3://bucket/prefix)"
            ))
        };
        let rest = location
            .strip_prefix(SCHEME)
            .ok_or_else(|| invalid("not an s3:// URL"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.'));
        if !bucket_ok {
            return Err(invalid(
                "a bucket name is 3 to 63 lower-case letters, digits, '-' or '.'",
            ));
        }
        let prefix = prefix.trim_matches('/');
        if prefix
            .split('/')
            .any(|part| part == "." || part == ".." || (part.is_empty() && !prefix.is_empty()))
        {
            return Err(invalid("the prefix has an empty, '.' or '..' segment"));
        }
        Ok(S3Location {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        })
    }

    fn key(&self, rest: &str) -> Result<Path> {
        let key = if self.prefix.is_empty() {
            rest.to_owned()
        } else {
            format!("{}/{rest}", self.prefix)
        };
        Path::parse(&key).map_err(|e| Error::InvalidInput(format!("object key {key:?}: {e}")))
    }
}

impl std::fmt::Display for S3Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "{SCHEME}{}", self.bucket)
        } else {
            write!(f, "{SCHEME}{}/{}", self.bucket, self.prefix)
        }
    }
}

/// Document files as objects of an S3-compatible bucket, under a key prefix: `PREFIX/ab/cdef..`
/// (the generated names of [`generate_name`]), deleted ones kept a day under `PREFIX/.deleted/`.
/// Clones share the client and the runtime.
#[derive(Clone)]
pub struct S3Storage {
    store: Arc<AmazonS3>,
    location: S3Location,
    endpoint: String,
    runtime: Arc<OwnRuntime>,
}

/// The storage's runtime, shut down without waiting when the last clone goes: dropping a
/// runtime the ordinary way blocks, which panics inside another runtime's context.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for S3Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Storage")
            .field("location", &self.location.to_string())
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// Whether `settings` name credentials `object_store` can use without asking the EC2 instance
/// metadata service (which, away from EC2, only times out).
fn has_credentials(settings: &[(String, String)]) -> bool {
    let set = |k: &str| settings.iter().any(|(key, v)| key == k && !v.is_empty());
    (set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY"))
        || (set("AWS_WEB_IDENTITY_TOKEN_FILE") && set("AWS_ROLE_ARN"))
        || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        || settings
            .iter()
            .any(|(k, v)| k == "AWS_SKIP_SIGNATURE" && v == "true")
}

impl S3Storage {
    /// Opens the storage at `location` (`s3://bucket/prefix`) with credentials, endpoint and
    /// region from the environment (the `AWS_*` variables), checks that the bucket answers (an
    /// unknown bucket, refused credentials or an unreachable endpoint fail here, with a message
    /// saying which), and removes the deleted files kept aside for longer than a day.
    pub fn open(location: &str) -> Result<S3Storage> {
        S3Storage::open_with(
            location,
            std::env::vars().filter(|(k, _)| k.starts_with("AWS_")),
        )
    }

    /// [`S3Storage::open`] with `settings` in place of the environment: pairs named as the
    /// environment variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_ALLOW_HTTP`, ...).
    pub fn open_with(
        location: &str,
        settings: impl IntoIterator<Item = (String, String)>,
    ) -> Result<S3Storage> {
        let location = S3Location::parse(location)?;
        let settings: Vec<(String, String)> = settings.into_iter().collect();
        let opening = format!("opening the file storage {location}");
        if !has_credentials(&settings) {
            return Err(Error::InvalidInput(format!(
                "{opening}: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                 (or AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN)"
            )));
        }
        // Timeouts that report an unreachable endpoint within seconds, and a request limit
        // long enough for a large part or a slow reader of a download.
        let mut builder = AmazonS3Builder::new()
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                "5s",
            )
            .with_config(AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), "1h");
        for (key, value) in settings {
            if let Ok(key) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                builder = builder.with_config(key, value);
            }
        }
        let endpoint = builder
            .get_config_value(&AmazonS3ConfigKey::Endpoint)
            .unwrap_or_else(|| "AWS S3".to_owned());
        let store = builder
            .with_bucket_name(&location.bucket)
            .with_retry(RetryConfig {
                max_retries: 3,
                retry_timeout: Duration::from_secs(30),
                ..RetryConfig::default()
            })
            .build()
            .map_err(|e| {
                let hint = if endpoint.starts_with("http://") {
                    " (an http:// endpoint needs AWS_ALLOW_HTTP=true)"
                } else {
                    ""
                };
                Error::InvalidInput(format!("{opening}: {e}{hint}"))
            })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("docmeta-s3")
            .enable_all()
            .build()
            .map_err(|e| Error::storage(format!("{opening}: starting its runtime"), e))?;
        let storage = S3Storage {
            store: Arc::new(store),
            location,
            endpoint,
            runtime: Arc::new(OwnRuntime(Some(runtime))),
        };
        storage.remove_old_deleted(&opening)?;
        Ok(storage)
    }

    /// The bucket and prefix.
    pub fn bucket_location(&self) -> &S3Location {
        &self.location
    }

    /// Every name stored (not those kept aside after a delete), for an operator looking for
    /// objects no record references, and for tests.
    pub fn names(&self) -> Result<Vec<String>> {
        let store = self.store.clone();
        let prefix =
            (!self.location.prefix.is_empty()).then(|| Path::from(self.location.prefix.as_str()));
        let strip = if self.location.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", self.location.prefix)
        };
        let listed = self.run(async move {
            let mut keys = Vec::new();
            let mut list = store.list(prefix.as_ref());
            while let Some(meta) = list.next().await {
                keys.push(meta?.location.to_string());
            }
            Ok::<_, object_store::Error>(keys)
        })?;
        let keys = listed.map_err(|e| self.error("listing the stored document files", e))?;
        Ok(keys
            .into_iter()
            .filter_map(|k| k.strip_prefix(&strip).map(str::to_owned))
            .filter(|name| check_name(name).is_ok())
            .collect())
    }

    /// Runs `future` on the storage's runtime and waits for its output on a channel.
    fn run<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T> {
        wait(self.spawn(future))
    }

    /// Starts `future` on the storage's runtime; its output arrives on the returned channel.
    fn spawn<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> mpsc::Receiver<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        if let Some(runtime) = &self.runtime.0 {
            runtime.spawn(async move {
                let _ = tx.send(future.await);
            });
        }
        rx
    }

    /// An `object_store` failure of `operation` as a docmeta error that says what went wrong:
    /// an unknown bucket, refused credentials or an endpoint that does not answer.
    fn error(&self, operation: impl Into<String>, e: object_store::Error) -> Error {
        let operation = operation.into();
        let text = error_chain(&e);
        let place = format!("bucket {} at {}", self.location.bucket, self.endpoint);
        let why = if text.contains("URL scheme is not allowed") {
            format!(
                "the endpoint {} is plain http://: set AWS_ALLOW_HTTP=true to allow it (a \
                 loopback or private server)",
                self.endpoint
            )
        } else if text.contains("NoSuchBucket") {
            format!("the bucket does not exist ({place})")
        } else if matches!(
            e,
            object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }
        ) || text.contains("InvalidAccessKeyId")
            || text.contains("SignatureDoesNotMatch")
            || text.contains("AccessDenied")
        {
            format!("the S3 credentials were refused ({place}): {text}")
        } else if text.contains("error sending request")
            || text.contains("onnect")
            || text.contains("timed out")
            || text.contains("dns error")
        {
            format!(
                "the S3 endpoint {} cannot be reached: {text}",
                self.endpoint
            )
        } else {
            format!("{place}: {text}")
        };
        Error::storage(operation, why)
    }

    fn remove_old_deleted(&self, opening: &str) -> Result<()> {
        let store = self.store.clone();
        let prefix = self.location.key(DELETED)?;
        let listed = self.run(async move {
            let mut old = Vec::new();
            let mut list = store.list(Some(&prefix));
            while let Some(meta) = list.next().await {
                let meta = meta?;
                let age = chrono::Utc::now().signed_duration_since(meta.last_modified);
                if age.to_std().is_ok_and(|age| age > DELETED_KEPT) {
                    old.push(meta.location);
                }
            }
            for key in old {
                store.delete(&key).await?;
            }
            Ok::<_, object_store::Error>(())
        })?;
        listed.map_err(|e| self.error(opening.to_owned(), e))
    }

    fn deleted_key(&self, name: &str) -> Result<Path> {
        check_name(name)?;
        self.location
            .key(&format!("{DELETED}/{}", name.replace('/', "-")))
    }

    fn head(&self, key: Path, operation: String) -> Result<Option<u64>> {
        let store = self.store.clone();
        match self.run(async move { store.head(&key).await })? {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(operation, e)),
        }
    }

    fn get(&self, key: Path, operation: String) -> Result<Option<Box<dyn Read + Send>>> {
        let store = self.store.clone();
        match self.run(async move { store.get(&key).await })? {
            Ok(got) => Ok(Some(Box::new(Download::new(
                self.runtime_handle(),
                got.into_stream(),
                operation,
            )))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(operation, e)),
        }
    }

    fn runtime_handle(&self) -> Option<tokio::runtime::Handle> {
        self.runtime.0.as_ref().map(|r| r.handle().clone())
    }

    /// Uploads `content` to `key`: one put for a file up to one part, a multipart upload
    /// (aborted on failure) for a larger one.
    fn upload(&self, key: Path, content: &mut dyn Read) -> Result<()> {
        let operation = "storing a document file";
        let first = read_part(content).map_err(|e| super::content_error(operation, e))?;
        if first.len() < PART {
            let store = self.store.clone();
            return self
                .run(async move { store.put(&key, PutPayload::from(first)).await })?
                .map(drop)
                .map_err(|e| self.error(operation, e));
        }
        let store = self.store.clone();
        let mut upload = self
            .run(async move { store.put_multipart(&key).await })?
            .map_err(|e| self.error(operation, e))?;
        let mut in_flight: VecDeque<mpsc::Receiver<object_store::Result<()>>> = VecDeque::new();
        let mut part = Some(first);
        let sent = (|| {
            while let Some(bytes) = part.take() {
                if in_flight.len() >= PARTS_IN_FLIGHT
                    && let Some(oldest) = in_flight.pop_front()
                {
                    wait(oldest)?.map_err(|e| self.error(operation, e))?;
                }
                in_flight.push_back(self.spawn(upload.put_part(PutPayload::from(bytes))));
                let next = read_part(content).map_err(|e| super::content_error(operation, e))?;
                if !next.is_empty() {
                    part = Some(next);
                }
            }
            while let Some(oldest) = in_flight.pop_front() {
                wait(oldest)?.map_err(|e| self.error(operation, e))?;
            }
            Ok(())
        })();
        let (mut upload, finished) = self.run(async move {
            let finished = match sent {
                Ok(()) => upload.complete().await.map(drop).map_err(Err),
                Err(e) => Err(Ok(e)),
            };
            (upload, finished)
        })?;
        match finished {
            Ok(()) => Ok(()),
            Err(failure) => {
                // Nothing becomes visible; the parts already stored are released.
                let _ = self.run(async move { upload.abort().await });
                Err(match failure {
                    Ok(e) => e,
                    Err(e) => self.error(operation, e),
                })
            }
        }
    }
}

/// Waits for a spawned future's output.
fn wait<T>(rx: mpsc::Receiver<T>) -> Result<T> {
    rx.recv().map_err(|_| {
        Error::storage(
            "waiting for the S3 storage",
            "its runtime stopped before the request finished",
        )
    })
}

/// An error and its sources, in one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// Reads up to one part from `content` (less only at its end).
fn read_part(content: &mut dyn Read) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; PART];
    let mut filled = 0;
    while filled < PART {
        match content.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

type Chunks = BoxStream<'static, object_store::Result<bytes::Bytes>>;
/// A fetched batch: the stream (to fetch the next one from), the bytes, and whether it ended.
type Batch = (Chunks, object_store::Result<(VecDeque<bytes::Bytes>, bool)>);

/// A download read chunk by chunk: each batch of about [`BATCH`] bytes is fetched on the
/// storage's runtime while the reader consumes the one before.
struct Download {
    runtime: Option<tokio::runtime::Handle>,
    ready: VecDeque<bytes::Bytes>,
    next: Option<mpsc::Receiver<Batch>>,
    operation: String,
}

impl Download {
    fn new(runtime: Option<tokio::runtime::Handle>, chunks: Chunks, operation: String) -> Self {
        let mut download = Download {
            runtime,
            ready: VecDeque::new(),
            next: None,
            operation,
        };
        download.fetch(chunks);
        download
    }

    fn fetch(&mut self, mut chunks: Chunks) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        let (tx, rx) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            let mut batch = VecDeque::new();
            let mut size = 0;
            let result = loop {
                if size >= BATCH {
                    break Ok((batch, false));
                }
                match chunks.next().await {
                    Some(Ok(bytes)) => {
                        size += bytes.len();
                        batch.push_back(bytes);
                    }
                    Some(Err(e)) => break Err(e),
                    None => break Ok((batch, true)),
                }
            };
            let _ = tx.send((chunks, result));
        });
        self.next = Some(rx);
    }
}

impl Read for Download {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(front) = self.ready.front_mut() {
                let n = front.len().min(buf.len());
                buf[..n].copy_from_slice(&front[..n]);
                bytes::Buf::advance(front, n);
                if front.is_empty() {
                    self.ready.pop_front();
                }
                if n > 0 || buf.is_empty() {
                    return Ok(n);
                }
                continue;
            }
            let Some(next) = self.next.take() else {
                return Ok(0);
            };
            let (chunks, batch) = next.recv().map_err(|_| {
                io::Error::other(format!(
                    "{}: the S3 storage's runtime stopped during a download",
                    self.operation
                ))
            })?;
            let (batch, ended) = batch.map_err(|e| {
                io::Error::other(format!("{}: {}", self.operation, error_chain(&e)))
            })?;
            self.ready = batch;
            if !ended {
                self.fetch(chunks);
            }
        }
    }
}

impl FileStorage for S3Storage {
    fn put(&self, content: &mut dyn Read) -> Result<String> {
        let name = generate_name()?;
        self.put_as(&name, content)?;
        Ok(name)
    }

    fn put_as(&self, name: &str, content: &mut dyn Read) -> Result<()> {
        check_name(name)?;
        self.upload(self.location.key(name)?, content)
    }

    fn open(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        check_name(name)?;
        let operation = format!("opening document file {name}");
        self.get(self.location.key(name)?, operation.clone())?
            .ok_or_else(|| {
                Error::storage(
                    operation,
                    format!("the object is missing from {}", self.location),
                )
            })
    }

    fn delete(&self, name: &str) -> Result<()> {
        check_name(name)?;
        let key = self.location.key(name)?;
        let aside = self.deleted_key(name)?;
        let store = self.store.clone();
        // Kept aside a day (a copy, whose time is now, then the delete), as the directory
        // storage does, for a backup whose snapshot still references it.
        let moved = self.run(async move {
            match store.copy(&key, &aside).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => store.delete(&key).await,
                Err(e) => Err(e),
            }
        })?;
        match moved {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(format!("deleting document file {name}"), e)),
        }
    }

    fn stored_len(&self, name: &str) -> Result<Option<u64>> {
        check_name(name)?;
        self.head(
            self.location.key(name)?,
            format!("reading document file {name}"),
        )
    }

    fn kept_len(&self, name: &str) -> Result<Option<u64>> {
        match self.stored_len(name)? {
            Some(len) => Ok(Some(len)),
            None => self.head(
                self.deleted_key(name)?,
                format!("reading document file {name}"),
            ),
        }
    }

    fn location(&self) -> Option<String> {
        Some(self.location.to_string())
    }

    fn open_kept(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        check_name(name)?;
        let operation = format!("archiving document file {name}");
        if let Some(content) = self.get(self.location.key(name)?, operation.clone())? {
            return Ok(content);
        }
        self.get(self.deleted_key(name)?, operation.clone())?
            .ok_or_else(|| {
                Error::storage(
                    operation,
                    format!("the object is missing from {}", self.location),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_into_bucket_and_prefix() {
        let l = S3Location::parse("s3://docs-bucket/a/b/").expect("parse");
        assert_eq!(l.bucket, "docs-bucket");
        assert_eq!(l.prefix, "a/b");
        assert_eq!(l.to_string(), "s3://docs-bucket/a/b");
        let root = S3Location::parse("s3://docs-bucket").expect("parse");
        assert_eq!(root.prefix, "");
        assert_eq!(root.key("ab/cd").expect("key").as_ref(), "ab/cd");
    }

    #[test]
    fn malformed_locations_are_refused() {
        for bad in [
            "docs-bucket/a",
            "s3://",
            "s3://UPPER/a",
            "s3://b/a",
            "s3://docs-bucket/a//b",
            "s3://docs-bucket/../x",
        ] {
            assert!(S3Location::parse(bad).is_err(), "{bad}");
        }
    }
}
