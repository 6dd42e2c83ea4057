//! Watches answered as Tables (`kubectl get -w`): each event's object is a `meta.k8s.io`
//! Table holding the one row of the object the event carries (columns, cells and the
//! row's `object` as the Table request asks), as the real server converts each watch
//! event.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, json};

use crate::object::StoredObject;
use crate::server::Shared;
use crate::state::ResourceId;
use crate::table::TableRequest;

/// The watch line of one event of `object` (of `rid`) as a Table.
pub(crate) fn line(
    shared: &Shared,
    rid: ResourceId,
    table: TableRequest,
    event_type: &str,
    object: &Arc<StoredObject>,
) -> Bytes {
    let mut metadata = Map::new();
    metadata.insert("resourceVersion".to_owned(), json!(object.rv.to_string()));
    let body = {
        let state = shared.state();
        table.render(&state, rid, std::slice::from_ref(object), metadata)
    };
    crate::watch::event_line(event_type, &body)
}
