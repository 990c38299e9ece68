//! JSON bodies. A request body is read into its typed request struct by [`JsonBody`], the way
//! Django REST Framework reads a serializer's fields ([`de`]): unknown fields are ignored, a
//! field of the wrong type is a `400` naming the field, malformed JSON is a `400`. The same
//! structs describe the bodies in the OpenAPI document, with the field types of [`fields`].
//! Answers are written by [`Json`].

mod de;
pub mod fields;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
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

/// A request body read into `T` (see [`de`]): a JSON object (an empty body reads as `{}`),
/// each field of `T` read in the order `T` declares them.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let object = read_object(req, state).await?;
        read_fields(&object).map(JsonBody)
    }
}

/// A [`JsonBody`] whose fields are checked only when the handler asks ([`Self::read`]): for
/// routes that first look up what their path names, so that a missing object is a `404`
/// whatever the body holds. A body that is not a JSON object is refused at once, as by
/// [`JsonBody`].
#[derive(Debug)]
pub struct LaterBody<T>(Result<T, ApiError>);

impl<T> LaterBody<T> {
    /// The body's fields, or their refusal.
    pub fn read(self) -> Result<T, ApiError> {
        self.0
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for LaterBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let object = read_object(req, state).await?;
        Ok(LaterBody(read_fields(&object)))
    }
}

/// `T` read from a body's object, as [`JsonBody`] reads it.
pub fn read_fields<T: DeserializeOwned>(object: &Map<String, Value>) -> Result<T, ApiError> {
    de::from_object(object)
}

/// Reads a request body as a JSON object (an empty body reads as `{}`); JSON of another kind
/// is a `400`, and so is malformed JSON.
async fn read_object<S: Send + Sync>(
    req: Request,
    state: &S,
) -> Result<Map<String, Value>, ApiError> {
    let bytes = Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::detail(StatusCode::PAYLOAD_TOO_LARGE, "Request body is too large.")
        } else {
            ApiError::detail(StatusCode::BAD_REQUEST, "Could not read the request body.")
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    if json_values(&bytes) > MAX_JSON_VALUES {
        return Err(ApiError::detail(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("The request body holds more than {MAX_JSON_VALUES} JSON values."),
        ));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::field("non_field_errors", de::NOT_AN_OBJECT)),
        Err(e) => Err(ApiError::detail(
            StatusCode::BAD_REQUEST,
            &format!("JSON parse error - {e}"),
        )),
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
