//! Stored responses on the wire: what one request keeps ([`Keep`]), the conversation a
//! `previous_response_id` continues ([`context`]), and `GET /v1/responses/{id}`, its
//! `input_items`, and `DELETE`. Every lookup is under the inbound key's scope: a response made
//! with one key is not found with another, exactly as an id that never existed.

use crate::Gateway;
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::store::{ResponseStore, Stored};
use axum::Json;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// What a request that is to be kept carries to its end.
#[derive(Debug, Clone)]
pub struct Keep {
    store: Arc<ResponseStore>,
    scope: Option<String>,
    id: String,
    input_items: Vec<Value>,
    earlier: Vec<Value>,
}

impl Keep {
    /// A request answered as `resp_{id}`, with its input items, after `earlier`.
    pub fn new(
        store: &Arc<ResponseStore>,
        scope: Option<String>,
        id: &str,
        input_items: Vec<Value>,
        earlier: Vec<Value>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store: store.clone(),
            scope,
            id: format!("resp_{id}"),
            input_items,
            earlier,
        })
    }

    /// Keeps `response`; false (and a warning) when the store failed, so the answer can say
    /// it was not stored rather than fail.
    pub async fn put(&self, response: Value) -> bool {
        let output = response["output"].as_array().cloned().unwrap_or_default();
        let mut context = self.earlier.clone();
        context.extend(self.input_items.iter().cloned());
        context.extend(output);
        let entry = Stored {
            response,
            input_items: self.input_items.clone(),
            context,
        };
        match self
            .store
            .put(self.scope.as_deref(), &self.id, &entry)
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "a response could not be stored");
                false
            }
        }
    }
}

/// The conversation stored response `id` ends: its earlier context, its input and its output.
pub async fn context(
    store: &ResponseStore,
    scope: Option<&str>,
    id: &str,
) -> Result<Vec<Value>, ApiError> {
    Ok(find(store, scope, id, "previous_response_id")
        .await?
        .context)
}

async fn find(
    store: &ResponseStore,
    scope: Option<&str>,
    id: &str,
    param: &'static str,
) -> Result<Stored, ApiError> {
    match store.get(scope, id).await {
        Ok(Some(stored)) => Ok(stored),
        Ok(None) => Err(not_found(param)),
        Err(e) => Err(unavailable(&e)),
    }
}

fn not_found(param: &'static str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "response_not_found",
        "no stored response has that id for this key",
    )
    .param(param)
}

fn unavailable(e: &dyn std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_error",
        "store_unavailable",
        format!("the response store failed: {e}"),
    )
}

fn scope(tenant: &Tenant) -> Option<&str> {
    tenant.0.as_deref()
}

/// `GET /v1/responses/{id}`.
pub async fn retrieve(
    State(gw): State<Arc<Gateway>>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Response {
    match find(&gw.store, scope(&tenant), &id, "response_id").await {
        Ok(stored) => Json(stored.response).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `DELETE /v1/responses/{id}`.
pub async fn delete(
    State(gw): State<Arc<Gateway>>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Response {
    match gw.store.delete(scope(&tenant), &id).await {
        Ok(true) => {
            Json(json!({ "id": id, "object": "response", "deleted": true })).into_response()
        }
        Ok(false) => not_found("response_id").into_response(),
        Err(e) => unavailable(&e).into_response(),
    }
}

/// The query of `input_items`: a page, newest first unless `order=asc`.
#[derive(Debug, Deserialize)]
pub struct Page {
    /// Items per page, 1 to 100 (default 20).
    #[serde(default)]
    limit: Option<usize>,
    /// `asc` or `desc` (default).
    #[serde(default)]
    order: Option<String>,
    /// The id of the item the page starts after.
    #[serde(default)]
    after: Option<String>,
}

/// `GET /v1/responses/{id}/input_items`.
pub async fn input_items(
    State(gw): State<Arc<Gateway>>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
    Query(page): Query<Page>,
) -> Response {
    let stored = match find(&gw.store, scope(&tenant), &id, "response_id").await {
        Ok(stored) => stored,
        Err(e) => return e.into_response(),
    };
    match list(stored.input_items, &page) {
        Ok(list) => Json(list).into_response(),
        Err(e) => e.into_response(),
    }
}

/// One page of `items` as OpenAI lists them.
fn list(mut items: Vec<Value>, page: &Page) -> Result<Value, ApiError> {
    let limit = page.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid("limit", "limit must be from 1 to 100"));
    }
    match page.order.as_deref() {
        None | Some("desc") => items.reverse(),
        Some("asc") => {}
        Some(_) => return Err(ApiError::invalid("order", "order must be asc or desc")),
    }
    if let Some(after) = &page.after {
        let at = items
            .iter()
            .position(|i| i["id"].as_str() == Some(after))
            .ok_or_else(|| ApiError::invalid("after", "no input item has that id"))?;
        items.drain(..=at);
    }
    let has_more = items.len() > limit;
    items.truncate(limit);
    let first = items
        .first()
        .map(|i| i["id"].clone())
        .unwrap_or(Value::Null);
    let last = items.last().map(|i| i["id"].clone()).unwrap_or(Value::Null);
    Ok(json!({
        "object": "list", "data": items, "first_id": first, "last_id": last, "has_more": has_more,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!({ "id": format!("i{i}") })).collect()
    }

    fn ids(list: &Value) -> Vec<&str> {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn pages_run_newest_first_and_continue_after_an_id() {
        let page = |limit, order: Option<&str>, after: Option<&str>| Page {
            limit,
            order: order.map(Into::into),
            after: after.map(Into::into),
        };
        let first = list(items(5), &page(Some(2), None, None)).unwrap();
        assert_eq!(ids(&first), ["i4", "i3"]);
        assert_eq!(first["has_more"], true);
        let next = list(items(5), &page(Some(2), None, Some("i3"))).unwrap();
        assert_eq!(ids(&next), ["i2", "i1"]);
        let asc = list(items(3), &page(None, Some("asc"), None)).unwrap();
        assert_eq!(ids(&asc), ["i0", "i1", "i2"]);
        assert_eq!(
            (asc["first_id"].as_str(), asc["has_more"].as_bool()),
            (Some("i0"), Some(false))
        );
        for bad in [
            page(Some(0), None, None),
            page(None, Some("up"), None),
            page(None, None, Some("x")),
        ] {
            assert_eq!(
                list(items(3), &bad).unwrap_err().status,
                StatusCode::BAD_REQUEST
            );
        }
    }
}
