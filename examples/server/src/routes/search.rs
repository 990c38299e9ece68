//! Search endpoints (api.md): documents and DocumentMetadataSearchResult records.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use docmeta_core::Error;
use utoipa::IntoParams;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::page::ListQuery;
use crate::state::{AppState, CurrentUser};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(search_documents))
        .routes(routes!(search_metadata))
}

fn query_text(q: &ListQuery) -> ApiResult<String> {
    q.params
        .get("q")
        .filter(|t| !t.trim().is_empty())
        .cloned()
        .ok_or_else(|| ApiError::field("q", "This parameter is required."))
}

/// `q`, a search's query, described as `description` says: required, not blank, at most 2,000
/// bytes (500 characters always fit).
fn query_param(description: &str) -> Vec<Parameter> {
    vec![
        ParameterBuilder::new()
            .name("q")
            .parameter_in(ParameterIn::Query)
            .required(Required::True)
            .description(Some(description))
            .schema(Some(crate::body::fields::label::<500>()))
            .build(),
    ]
}

/// The query of a document search (for the OpenAPI description).
struct DocumentQuery;

impl IntoParams for DocumentQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut params = query_param(
            "Query (spec 2.5): field:value terms, OR, NOT, quoted phrases, ranges [a TO b], >=, <; \
             and terms bound to a metadata type, compared by its value type: `amount:>1000`, \
             `due:[2024-01-01 TO 2024-03-31]`, `has:po_number`, `NOT has:po_number` (a type the \
             caller may not view matches nothing)",
        );
        params.push(ordering_param());
        params
    }
}

/// `ordering`: by the values of a metadata type rather than by relevance.
pub fn ordering_param() -> Parameter {
    ParameterBuilder::new()
        .name("ordering")
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .description(Some(
            "A metadata type's name, `-` first for descending: documents in the order of their \
             values of that type (compared by its value type; documents without a value, or \
             whose value the caller may not view, last), ties by id. Such an order reaches \
             10,000 documents deep.",
        ))
        .schema(Some(crate::body::fields::label::<49>()))
        .build()
}

/// The query of a metadata search (for the OpenAPI description).
struct MetadataQuery;

impl IntoParams for MetadataQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        query_param("Query over metadata_type__name, value and document__document_type__label")
    }
}

/// A malformed query is a `400` keyed by `q`.
fn query_error(e: Error) -> ApiError {
    match e {
        Error::InvalidInput(message) => ApiError::field("q", message),
        e => e.into(),
    }
}

#[utoipa::path(get, path = "/api/v4/search/documents/", tag = "search",
    params(DocumentQuery, crate::page::PageParams),
    responses((status = 200, body = PageOut, description = "Documents the caller may view, best first"), (status = 400, body = ErrorOut)))]
async fn search_documents(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    let text = query_text(&q)?;
    app.run(user, move |s| {
        let mut search = docmeta_core::SearchQuery::new(text);
        search.ordering = q.ordering.as_deref().and_then(docmeta_core::OrderBy::parse);
        let page = s
            .search_documents(search, q.request())
            .map_err(query_error)?;
        Ok(q.page(&uri, page, |x| DocumentOut::from(&x))?
            .into_response())
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/search/metadata/", tag = "search",
    params(MetadataQuery, crate::page::PageParams),
    responses((status = 200, body = PageOut, description = "Metadata values whose document and type the caller may view"), (status = 400, body = ErrorOut)))]
async fn search_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    let text = query_text(&q)?;
    app.run(user, move |s| {
        let page = s.search_metadata(&text, q.request()).map_err(query_error)?;
        Ok(q.page(&uri, page, |x| DocumentMetadataOut::from(&x))?
            .into_response())
    })
    .await
}
