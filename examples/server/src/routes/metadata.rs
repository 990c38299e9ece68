//! Metadata types (spec 4.1) and document types with their associations (spec 4.3).

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{
    AssociationId, DocumentTypeId, MetadataType, MetadataTypeId, MetadataTypeInput,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::{JsonBody, LaterBody};
use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::page::ListQuery;
use crate::requests::{
    AssociationIn, AssociationPatchIn, AssociationPutIn, DocumentTypeIn, DocumentTypePatchIn,
    MetadataTypeIn, MetadataTypePatchIn, TemplatePreviewIn,
};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_metadata_types, create_metadata_type))
        .routes(routes!(
            get_metadata_type,
            patch_metadata_type,
            put_metadata_type,
            delete_metadata_type
        ))
        .routes(routes!(check_value_type))
        .routes(routes!(preview_templates))
        .routes(routes!(list_document_types, create_document_type))
        .routes(routes!(
            get_document_type,
            patch_document_type,
            put_document_type,
            delete_document_type
        ))
        .routes(routes!(list_associations, create_association))
        .routes(routes!(
            get_association,
            patch_association,
            put_association,
            delete_association
        ))
}

/// The fields of a metadata type a POST or PUT gives (absent ones are empty).
fn metadata_type_input(body: MetadataTypeIn) -> MetadataTypeInput {
    MetadataTypeInput {
        name: body.name,
        label: body.label,
        default: body.default.unwrap_or_default(),
        lookup: body.lookup.unwrap_or_default(),
        validation: body.validation.unwrap_or_default(),
        validation_arguments: body.validation_arguments.unwrap_or_default(),
        parser: body.parser.unwrap_or_default(),
        parser_arguments: body.parser_arguments.unwrap_or_default(),
        value_type: body.value_type.map(|t| t.core()).unwrap_or_default(),
    }
}

/// The fields of metadata type `base` after a PATCH (absent ones keep their value).
fn patched_metadata_type(body: MetadataTypePatchIn, base: &MetadataType) -> MetadataTypeInput {
    let field = |given: Option<String>, current: &String| given.unwrap_or_else(|| current.clone());
    MetadataTypeInput {
        name: field(body.name, &base.name),
        label: field(body.label, &base.label),
        default: field(body.default, &base.default),
        lookup: field(body.lookup, &base.lookup),
        validation: field(body.validation, &base.validation),
        validation_arguments: field(body.validation_arguments, &base.validation_arguments),
        parser: field(body.parser, &base.parser),
        parser_arguments: field(body.parser_arguments, &base.parser_arguments),
        value_type: body.value_type.map_or(base.value_type, |t| t.core()),
    }
}

#[utoipa::path(get, path = "/api/v4/metadata/metadata-types/", tag = "metadata",
    params(crate::page::PageParams, ("ordering" = Option<String>, Query, description = "name, label or id, - for descending")),
    responses((status = 200, body = PageOut, description = "Metadata types the caller may view")))]
async fn list_metadata_types(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let all = s.metadata_types()?;
        q.respond(
            &uri,
            all,
            &[
                ("name", |a, b| a.name.cmp(&b.name)),
                ("label", |a, b| a.label.cmp(&b.label)),
                ("id", |a, b| a.id.cmp(&b.id)),
            ],
            MetadataTypeOut::from,
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/metadata/metadata-types/", tag = "metadata", request_body = MetadataTypeIn,
    responses((status = 201, body = MetadataTypeOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_metadata_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<MetadataTypeIn>,
) -> ApiResult<(StatusCode, Json<MetadataTypeOut>)> {
    let input = metadata_type_input(body);
    app.run(user, move |s| {
        Ok((
            StatusCode::CREATED,
            Json((&s.create_metadata_type(input)?).into()),
        ))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/metadata/metadata-types/{metadata_type_id}/", tag = "metadata",
    params(("metadata_type_id" = i64, Path)), responses((status = 200, body = MetadataTypeOut), (status = 404, body = ErrorOut)))]
async fn get_metadata_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<MetadataTypeOut>> {
    app.run(user, move |s| {
        Ok(Json((&s.metadata_type(MetadataTypeId(id))?).into()))
    })
    .await
}

/// Replaces metadata type `id` by what `input` makes of its current fields (the body is
/// checked once the type is found: a missing one is a `404` whatever the body).
async fn update_metadata_type(
    app: AppState,
    user: docmeta_core::UserId,
    id: i64,
    input: impl FnOnce(&MetadataType) -> ApiResult<MetadataTypeInput> + Send + 'static,
) -> ApiResult<Json<MetadataTypeOut>> {
    app.run(user, move |s| {
        let current = s.metadata_type(MetadataTypeId(id))?;
        let input = input(&current)?;
        Ok(Json((&s.update_metadata_type(current.id, input)?).into()))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/metadata/metadata-types/{metadata_type_id}/", tag = "metadata", request_body = MetadataTypePatchIn,
    description = "Changes a metadata type. Whoever changes its `default` or `lookup` becomes one of that template's shapers: it then renders, for anyone, with no more than what every shaper may view. An empty template has none.",
    params(("metadata_type_id" = i64, Path)), responses((status = 200, body = MetadataTypeOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_metadata_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: LaterBody<MetadataTypePatchIn>,
) -> ApiResult<Json<MetadataTypeOut>> {
    update_metadata_type(app, user, id, move |current| {
        Ok(patched_metadata_type(body.read()?, current))
    })
    .await
}

#[utoipa::path(put, path = "/api/v4/metadata/metadata-types/{metadata_type_id}/", tag = "metadata", request_body = MetadataTypeIn,
    params(("metadata_type_id" = i64, Path)), responses((status = 200, body = MetadataTypeOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn put_metadata_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: LaterBody<MetadataTypeIn>,
) -> ApiResult<Json<MetadataTypeOut>> {
    update_metadata_type(app, user, id, move |current| {
        let body = body.read()?;
        // A PUT that does not mention the value type keeps it (clients that know no value types
        // replace the other fields without untyping the type).
        let keep = body.value_type.is_none();
        let mut input = metadata_type_input(body);
        if keep {
            input.value_type = current.value_type;
        }
        Ok(input)
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/metadata/metadata-types/{metadata_type_id}/", tag = "metadata",
    params(("metadata_type_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_metadata_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_metadata_type(MetadataTypeId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

/// The value type to check stored values against (for the OpenAPI description: the route reads
/// it by hand, so that a missing or unknown one is a field error).
#[allow(dead_code)]
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ValueTypeQuery {
    /// The value type the metadata type would change to.
    value_type: crate::requests::ValueTypeIn,
}

#[utoipa::path(get, path = "/api/v4/metadata/metadata-types/{metadata_type_id}/value-type-check/", tag = "metadata",
    description = "Which stored values of the metadata type are not of `value_type`: what a change of its value type (PUT or PATCH) would be refused for, without trying it. Of the values the caller may view, `checked` were read and `count` do not fit, listed in `misfits` (at most 1,000, by value id); of the others, `hidden_misfits` says only whether one does not fit. The change is refused while any value does not fit. Needs `metadata_type_edit` on the type.",
    params(("metadata_type_id" = i64, Path), ValueTypeQuery),
    responses((status = 200, body = ValueTypeCheckOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn check_value_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<ValueTypeCheckOut>> {
    let value_type = match q.get("value_type") {
        None => return Err(ApiError::field("value_type", "This field is required.")),
        Some(name) => name
            .parse::<docmeta_core::ValueType>()
            .map_err(|e| ApiError::field("value_type", &e))?,
    };
    app.run(user, move |s| {
        Ok(Json(
            s.check_value_type(MetadataTypeId(id), value_type)?.into(),
        ))
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/metadata/metadata-types/preview/", tag = "metadata", request_body = TemplatePreviewIn,
    description = "What a default and a lookup template would render to, before they are saved: rendered as a metadata type's templates are, for `document_id` when given, with only what the caller may view. Syntax and rendering errors are answered in `default_error` and `lookup_error`. Needs global `metadata_type_create`, or `metadata_type_edit` on `metadata_type_id` when given. Changes nothing.",
    responses((status = 200, body = TemplatePreviewOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn preview_templates(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<TemplatePreviewIn>,
) -> ApiResult<Json<TemplatePreviewOut>> {
    let TemplatePreviewIn {
        default,
        lookup,
        document_id,
        metadata_type_id,
    } = body;
    app.run(user, move |s| {
        Ok(Json(
            s.preview_templates(
                default.as_deref().unwrap_or(""),
                lookup.as_deref().unwrap_or(""),
                document_id.map(|d| docmeta_core::DocumentId(d.0)),
                metadata_type_id.map(|t| MetadataTypeId(t.0)),
            )?
            .into(),
        ))
    })
    .await
}

// ----- document types ----------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v4/documents/types/", tag = "documents",
    params(crate::page::PageParams, ("ordering" = Option<String>, Query, description = "label or id")),
    responses((status = 200, body = PageOut)))]
async fn list_document_types(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let all = s.document_types()?;
        q.respond(
            &uri,
            all,
            &[
                ("label", |a, b| a.label.cmp(&b.label)),
                ("id", |a, b| a.id.cmp(&b.id)),
            ],
            |x| DocumentTypeOut::from(&x),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/documents/types/", tag = "documents", request_body = DocumentTypeIn,
    responses((status = 201, body = DocumentTypeOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_document_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(DocumentTypeIn { label }): JsonBody<DocumentTypeIn>,
) -> ApiResult<(StatusCode, Json<DocumentTypeOut>)> {
    app.run(user, move |s| {
        Ok((
            StatusCode::CREATED,
            Json((&s.create_document_type(&label)?).into()),
        ))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/types/{document_type_id}/", tag = "documents",
    params(("document_type_id" = i64, Path)), responses((status = 200, body = DocumentTypeOut), (status = 404, body = ErrorOut)))]
async fn get_document_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<DocumentTypeOut>> {
    app.run(user, move |s| {
        Ok(Json((&s.document_type(DocumentTypeId(id))?).into()))
    })
    .await
}

/// Renames document type `id` to `label` (unchanged without one).
async fn update_document_type(
    app: AppState,
    user: docmeta_core::UserId,
    id: i64,
    label: Option<String>,
) -> ApiResult<Json<DocumentTypeOut>> {
    app.run(user, move |s| {
        let t = match label {
            Some(label) => s.update_document_type(DocumentTypeId(id), &label)?,
            None => s.document_type(DocumentTypeId(id))?,
        };
        Ok(Json((&t).into()))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/documents/types/{document_type_id}/", tag = "documents", request_body = DocumentTypePatchIn,
    params(("document_type_id" = i64, Path)), responses((status = 200, body = DocumentTypeOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_document_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(DocumentTypePatchIn { label }): JsonBody<DocumentTypePatchIn>,
) -> ApiResult<Json<DocumentTypeOut>> {
    update_document_type(app, user, id, label).await
}

#[utoipa::path(put, path = "/api/v4/documents/types/{document_type_id}/", tag = "documents", request_body = DocumentTypeIn,
    params(("document_type_id" = i64, Path)), responses((status = 200, body = DocumentTypeOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn put_document_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(DocumentTypeIn { label }): JsonBody<DocumentTypeIn>,
) -> ApiResult<Json<DocumentTypeOut>> {
    update_document_type(app, user, id, Some(label)).await
}

#[utoipa::path(delete, path = "/api/v4/documents/types/{document_type_id}/", tag = "documents",
    params(("document_type_id" = i64, Path)), responses((status = 204), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_document_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_document_type(DocumentTypeId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

// ----- associations (spec 4.3) -------------------------------------------------------------

#[utoipa::path(get, path = "/api/v4/documents/types/{document_type_id}/metadata-types/", tag = "metadata",
    params(("document_type_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_associations(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let page = s.associations(DocumentTypeId(id), q.request())?;
        Ok(q.page(&uri, page, |a| AssociationOut::from(&a))?
            .into_response())
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/documents/types/{document_type_id}/metadata-types/", tag = "metadata", request_body = AssociationIn,
    params(("document_type_id" = i64, Path)), responses((status = 201, body = AssociationOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_association(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<AssociationIn>,
) -> ApiResult<(StatusCode, Json<AssociationOut>)> {
    let mt = body.metadata_type_id.0;
    let required = body.required.is_some_and(|f| f.0);
    app.run(user, move |s| {
        let a = s.associate(DocumentTypeId(id), MetadataTypeId(mt), required)?;
        Ok((StatusCode::CREATED, Json(AssociationOut::from(&a))))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/", tag = "metadata",
    params(("document_type_id" = i64, Path), ("association_id" = i64, Path)), responses((status = 200, body = AssociationOut), (status = 404, body = ErrorOut)))]
async fn get_association(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((dt, id)): Ids<(i64, i64)>,
) -> ApiResult<Json<AssociationOut>> {
    app.run(user, move |s| {
        let a = s.association(DocumentTypeId(dt), AssociationId(id))?;
        Ok(Json(AssociationOut::from(&a)))
    })
    .await
}

/// Sets association `id`'s `required` (unchanged without one); `metadata_type`, when given,
/// must be the association's own.
async fn update_association(
    app: AppState,
    user: docmeta_core::UserId,
    (dt, id): (i64, i64),
    required: Option<bool>,
    metadata_type: Option<i64>,
) -> ApiResult<Json<AssociationOut>> {
    app.run(user, move |s| {
        let current = s.association(DocumentTypeId(dt), AssociationId(id))?.association;
        if metadata_type.is_some_and(|mt| mt != current.metadata_type_id.0) {
            return Err(ApiError::field("metadata_type_id", "The metadata type of an association cannot be changed; delete it and create another."));
        }
        let a = match required {
            Some(r) => s.update_association(DocumentTypeId(dt), current.id, r)?,
            None => s.association(DocumentTypeId(dt), current.id)?,
        };
        Ok(Json(AssociationOut::from(&a)))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/", tag = "metadata", request_body = AssociationPatchIn,
    params(("document_type_id" = i64, Path), ("association_id" = i64, Path)), responses((status = 200, body = AssociationOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_association(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((dt, id)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<AssociationPatchIn>,
) -> ApiResult<Json<AssociationOut>> {
    let required = body.required.map(|f| f.0);
    let metadata_type = body.metadata_type_id.map(|t| t.0);
    update_association(app, user, (dt, id), required, metadata_type).await
}

#[utoipa::path(put, path = "/api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/", tag = "metadata", request_body = AssociationPutIn,
    params(("document_type_id" = i64, Path), ("association_id" = i64, Path)), responses((status = 200, body = AssociationOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn put_association(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((dt, id)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<AssociationPutIn>,
) -> ApiResult<Json<AssociationOut>> {
    let required = body.required.is_some_and(|f| f.0);
    let metadata_type = body.metadata_type_id.0;
    update_association(app, user, (dt, id), Some(required), Some(metadata_type)).await
}

#[utoipa::path(delete, path = "/api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/", tag = "metadata",
    params(("document_type_id" = i64, Path), ("association_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_association(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((dt, id)): Ids<(i64, i64)>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_association(DocumentTypeId(dt), AssociationId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}
