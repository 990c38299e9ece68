//! JSON bodies. Requests are read the way Django REST Framework does: unknown fields are
//! ignored, a field of the wrong type is a `400` naming the field, malformed JSON is a `400`.
//! Answers are written by [`Json`].

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Largest JSON request body (and the most text a multipart form's fields may hold together).
pub const MAX_BODY: usize = 1 << 20;

/// Most values (objects, arrays, keys and scalars) a JSON request body may hold. A value costs
/// the parsed tree about 80 bytes however short its text (`{}` is 2 bytes), so without this a
/// 1 MiB body of `{},{},…` would cost some 60 MiB; with it, at most about 10 MiB. A batch of
/// 1,000 documents with 30 initial values each holds about 95,000.
pub const MAX_JSON_VALUES: usize = 100_000;

/// The values of JSON text (keys included; see [`MAX_JSON_VALUES`]), counted without parsing
/// it: every string, object and array, and every other scalar where the grammar allows a value
/// to start (after `[`, `,` or `:`, or first). Exact for valid JSON; for invalid text, never
/// fewer than the parser builds before it fails.
fn json_values(text: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped) = (0usize, false, false);
    let mut previous: Option<u8> = None;
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => continue,
            b'"' => {
                in_string = true;
                count += 1;
            }
            b'{' | b'[' => count += 1,
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
                if matches!(previous, None | Some(b'[' | b',' | b':')) =>
            {
                count += 1;
            }
            _ => {}
        }
        previous = Some(b);
    }
    count
}

/// A JSON answer. Serialized into one buffer made large enough for most answers at once:
/// axum's `Json` starts from 128 bytes and grows as it writes, which copies a answer of a few
/// KiB several times over and cost a tenth of a metadata read's time.
pub struct Json<T>(pub T);

/// The first buffer of a [`Json`] answer (a page of metadata values is about 3 KiB).
const ANSWER_CAPACITY: usize = 4096;

impl<T: serde::Serialize> Json<T> {
    /// The answer's bytes.
    pub fn to_bytes(&self) -> Result<Bytes, ApiError> {
        let mut buf = Vec::with_capacity(ANSWER_CAPACITY);
        serde_json::to_writer(&mut buf, &self.0).map_err(|e| {
            tracing::error!(error = %e, "an answer could not be serialized");
            ApiError::internal()
        })?;
        Ok(Bytes::from(buf))
    }
}

/// A `200` answer of JSON `bytes`.
pub fn json_answer(bytes: Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response()
}

impl<T: serde::Serialize> axum::response::IntoResponse for Json<T> {
    fn into_response(self) -> axum::response::Response {
        match self.to_bytes() {
            Ok(bytes) => json_answer(bytes),
            Err(e) => e.into_response(),
        }
    }
}

/// A JSON object body (an empty body reads as `{}`).
#[derive(Debug, Default)]
pub struct Body(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::detail(StatusCode::PAYLOAD_TOO_LARGE, "Request body is too large.")
            } else {
                ApiError::detail(StatusCode::BAD_REQUEST, "Could not read the request body.")
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Body::default());
        }
        if json_values(&bytes) > MAX_JSON_VALUES {
            return Err(ApiError::detail(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("The request body holds more than {MAX_JSON_VALUES} JSON values."),
            ));
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(Body(map)),
            Ok(_) => Err(ApiError::field(
                "non_field_errors",
                "Invalid data. Expected a dictionary.",
            )),
            Err(e) => Err(ApiError::detail(
                StatusCode::BAD_REQUEST,
                &format!("JSON parse error - {e}"),
            )),
        }
    }
}

impl Body {
    fn present(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// An optional string field.
    pub fn opt_str(&self, field: &str) -> Result<Option<String>, ApiError> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::field(field, "Not a valid string.")),
        }
    }

    /// A required string field.
    pub fn str(&self, field: &str) -> Result<String, ApiError> {
        self.opt_str(field)?
            .ok_or_else(|| ApiError::field(field, "This field is required."))
    }

    /// An optional boolean field.
    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>, ApiError> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(_) => Err(ApiError::field(field, "Must be a valid boolean.")),
        }
    }

    /// An optional positive integer id (a number, or a string of digits).
    pub fn opt_id(&self, field: &str) -> Result<Option<i64>, ApiError> {
        let id = match self.present(field) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(_) => None,
        };
        match id {
            Some(id) if id > 0 => Ok(Some(id)),
            _ => Err(ApiError::field(field, "A valid integer is required.")),
        }
    }

    /// A required positive integer id.
    pub fn id(&self, field: &str) -> Result<i64, ApiError> {
        self.opt_id(field)?
            .ok_or_else(|| ApiError::field(field, "This field is required."))
    }

    /// An optional list of positive integer ids.
    pub fn opt_ids(&self, field: &str) -> Result<Option<Vec<i64>>, ApiError> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v.as_i64() {
                    Some(id) if id > 0 => Ok(id),
                    _ => Err(ApiError::field(
                        field,
                        "A list of valid integers is required.",
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(ApiError::field(
                field,
                "A list of valid integers is required.",
            )),
        }
    }

    /// A field as raw JSON.
    pub fn raw(&self, field: &str) -> Option<&Value> {
        self.present(field)
    }

    /// A permission key field.
    pub fn permission(&self) -> Result<docmeta_core::Permission, ApiError> {
        let key = self.str("permission")?;
        docmeta_core::Permission::from_key(&key)
            .map_err(|_| ApiError::field("permission", format!("Unknown permission \"{key}\".")))
    }
}

#[cfg(test)]
mod tests {
    use super::json_values;

    #[test]
    fn json_values_are_counted_as_the_parser_builds_them() {
        for text in [
            "{}",
            "[]",
            "[1, 2, 3]",
            "-12.5e3",
            r#"{"a": [1, {"b": null}], "c": "x,:[{", "d": [true, false, -0.5, []]}"#,
            r#"["a\"b,", "\\", ",", {}, {}, [[]]]"#,
            "[{},{},{},{}]",
        ] {
            let parsed = serde_json::from_str::<serde_json::Value>(text).map(|v| count(&v));
            assert_eq!(parsed.ok(), Some(json_values(text.as_bytes())), "{text}");
        }
    }

    /// Values and keys of a parsed tree.
    fn count(v: &serde_json::Value) -> usize {
        1 + match v {
            serde_json::Value::Array(a) => a.iter().map(count).sum(),
            serde_json::Value::Object(o) => o.values().map(|v| 1 + count(v)).sum(),
            _ => 0,
        }
    }
}
