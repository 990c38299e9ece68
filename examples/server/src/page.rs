//! Pagination (`?page=N&page_size=M`, default 20, max 500) and ordering (`?ordering=field` or
//! `-field`) of list responses. Core pages what it lists (`docmeta_core::Page`, also for a
//! complete list: `Page::of`); this turns a page into the answer, with its links.

use std::collections::HashMap;

use axum::http::{StatusCode, Uri};
use docmeta_core::PageRequest;
use serde::Serialize;

use crate::error::ApiError;

pub const DEFAULT_PAGE_SIZE: usize = 20;
pub const MAX_PAGE_SIZE: usize = 500;

/// A field a list may be ordered by, and how to compare two items by it.
pub type Sortable<T> = (&'static str, fn(&T, &T) -> std::cmp::Ordering);

/// A page of a list, serialized straight to the response (no intermediate JSON tree).
#[derive(Debug, Serialize)]
pub struct Page<T> {
    pub count: usize,
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<T>,
}

impl<T: Serialize> axum::response::IntoResponse for Page<T> {
    fn into_response(self) -> axum::response::Response {
        crate::body::Json(self).into_response()
    }
}

/// The paging parameters of every list, for the OpenAPI document ([`ListQuery`] reads them).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Describes the parameters; never constructed.
pub struct PageParams {
    /// The page, from 1; a page past the end is a `404`.
    #[param(minimum = 1)]
    page: Option<u64>,
    /// Items per page: 20 unless given, at most 500 (a larger size is read as 500).
    #[param(minimum = 1, maximum = 500)]
    page_size: Option<u64>,
}

/// The query parameters of a list request.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub page: usize,
    pub page_size: usize,
    pub ordering: Option<String>,
    pub params: HashMap<String, String>,
}

impl ListQuery {
    pub fn parse(params: HashMap<String, String>) -> Result<ListQuery, ApiError> {
        let page = match params.get("page") {
            None => 1,
            Some(p) => p
                .parse::<usize>()
                .ok()
                .filter(|p| *p >= 1)
                .ok_or_else(|| ApiError::detail(StatusCode::NOT_FOUND, "Invalid page."))?,
        };
        let page_size = match params.get("page_size") {
            None => DEFAULT_PAGE_SIZE,
            Some(s) => s
                .parse::<usize>()
                .ok()
                .filter(|s| *s >= 1)
                .ok_or_else(|| ApiError::field("page_size", "A positive integer is required."))?
                .min(MAX_PAGE_SIZE),
        };
        let ordering = params.get("ordering").filter(|o| !o.is_empty()).cloned();
        Ok(ListQuery {
            page,
            page_size,
            ordering,
            params,
        })
    }

    /// Sorts `items` by the requested field when it is one of `sortable` (unknown fields are
    /// ignored, as in Django REST Framework).
    pub fn order<T>(&self, items: &mut [T], sortable: &[Sortable<T>]) {
        let Some(ordering) = &self.ordering else {
            return;
        };
        let (descending, field) = match ordering.strip_prefix('-') {
            Some(f) => (true, f),
            None => (false, ordering.as_str()),
        };
        if let Some((_, cmp)) = sortable.iter().find(|(name, _)| *name == field) {
            items.sort_by(|a, b| if descending { cmp(b, a) } else { cmp(a, b) });
        }
    }

    /// The page the request asks for, for core's paged lists.
    pub fn request(&self) -> PageRequest {
        PageRequest::new(self.page, self.page_size)
    }

    /// The response body of a page core returned, each item converted by `show`; a page past
    /// the end is a `404`. Every list answers through here.
    pub fn page<T, U: Serialize>(
        &self,
        uri: &Uri,
        page: docmeta_core::Page<T>,
        show: impl FnMut(T) -> U,
    ) -> Result<Page<U>, ApiError> {
        if self.request().is_past_end(page.count) {
            return Err(ApiError::detail(StatusCode::NOT_FOUND, "Invalid page."));
        }
        let page = page.map(show);
        let has_next = self.page.saturating_mul(self.page_size) < page.count;
        Ok(Page {
            count: page.count,
            next: has_next.then(|| self.link(uri, self.page + 1)),
            previous: (self.page > 1).then(|| self.link(uri, self.page - 1)),
            results: page.items,
        })
    }

    /// Orders and pages a complete list.
    pub fn respond<T, U: Serialize>(
        &self,
        uri: &Uri,
        mut items: Vec<T>,
        sortable: &[Sortable<T>],
        show: impl FnMut(T) -> U,
    ) -> Result<Page<U>, ApiError> {
        self.order(&mut items, sortable);
        self.page(uri, docmeta_core::Page::of(items, self.request()), show)
    }

    /// The address of page `page` of this list: the same path and query, `page` replaced.
    fn link(&self, uri: &Uri, page: usize) -> String {
        let mut query: Vec<(&str, &str)> = self
            .params
            .iter()
            .filter(|(k, _)| *k != "page")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        query.sort();
        let page = page.to_string();
        query.push(("page", &page));
        let query: Vec<String> = query
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        format!("{}?{}", uri.path(), query.join("&"))
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
