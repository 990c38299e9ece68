//! Core errors → HTTP responses, with the status codes and bodies of api.md. A `500` never
//! carries internal detail; the detail goes to the log.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use docmeta_core::{Error, FieldStep};
use serde_json::{Value, json};

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: Value,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, body: Value) -> Self {
        ApiError {
            status,
            body,
            retry_after: None,
        }
    }

    /// `{"detail": message}`.
    pub fn detail(status: StatusCode, message: &str) -> Self {
        Self::new(status, json!({ "detail": message }))
    }

    /// `400 {"field": [message]}`.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, json!({ field: [message.into()] }))
    }

    pub fn not_found() -> Self {
        Self::detail(StatusCode::NOT_FOUND, "Not found.")
    }

    pub fn unauthorized() -> Self {
        Self::detail(StatusCode::UNAUTHORIZED, "Invalid username/password.")
    }

    pub fn internal() -> Self {
        Self::detail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "A server error occurred.",
        )
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match e {
            e @ (Error::Validation { .. } | Error::Conflict { .. }) => field_error(&e),
            Error::PermissionDenied(message) => ApiError::detail(
                StatusCode::FORBIDDEN,
                &format!("You do not have permission to perform this action: {message}."),
            ),
            Error::NotFound(_) => ApiError::not_found(),
            Error::InvalidInput(message) => ApiError::field("non_field_errors", message),
            Error::Timeout(_) => ApiError::detail(
                StatusCode::REQUEST_TIMEOUT,
                "The request took too long; nothing was changed.",
            ),
            Error::Throttled(message) => ApiError {
                retry_after: Some(1),
                ..ApiError::detail(
                    StatusCode::TOO_MANY_REQUESTS,
                    &format!("Too busy; nothing was done. Try again shortly: {message}."),
                )
            },
            full @ Error::StorageFull { .. } => {
                tracing::error!(error = %full, "request failed: disk full");
                ApiError::detail(
                    StatusCode::INSUFFICIENT_STORAGE,
                    "The server has no space left to store this; nothing was stored.",
                )
            }
            busy if busy.is_busy() => {
                tracing::warn!(error = %busy, "request refused: conflicting concurrent changes");
                ApiError {
                    retry_after: Some(1),
                    ..ApiError::detail(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "The change conflicted with concurrent changes; nothing was changed. \
                         Try again.",
                    )
                }
            }
            other => {
                tracing::error!(error = %other, "request failed");
                ApiError::internal()
            }
        }
    }
}

/// `400` for a field error, nested as core's path says (Django REST framework's shape): `{"label":
/// [message]}`, or for a field of a list's entry `{"metadata": [{}, {"value": [message]}]}` (one
/// object per entry up to the refused one, `{}` for the accepted ones).
fn field_error(e: &Error) -> ApiError {
    let (Error::Validation { field, message } | Error::Conflict { field, message }) = e else {
        return ApiError::internal();
    };
    let path = e
        .field_path()
        .unwrap_or_else(|| vec![FieldStep::Field(field)]);
    let body = path
        .iter()
        .rev()
        .fold(json!([message]), |inner, step| match step {
            FieldStep::Field(name) => {
                Value::Object([((*name).to_owned(), inner)].into_iter().collect())
            }
            FieldStep::Entry(index) => {
                let mut entries = vec![json!({}); *index];
                entries.push(inner);
                Value::Array(entries)
            }
        });
    ApiError::new(StatusCode::BAD_REQUEST, body)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"docmeta\""),
            );
        }
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
