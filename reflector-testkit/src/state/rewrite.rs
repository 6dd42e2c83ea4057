//! Rewriting a resource's stored objects in place: same resourceVersions, no event, as
//! when the way objects are read from storage changes (a CRD's new schema).

use std::sync::Arc;

use serde_json::Value;

use super::{ResourceId, State};
use crate::object::StoredObject;

impl State {
    /// Passes every stored object of `rid`, and every version of one the event log holds,
    /// through `read`, keeping each one's key and resourceVersion. An object `read` leaves
    /// as it was keeps its bytes. Nothing is logged and no watcher is woken.
    pub(crate) fn rewrite_stored(&mut self, rid: ResourceId, mut read: impl FnMut(&mut Value)) {
        let mut reread = |object: &Arc<StoredObject>| -> Arc<StoredObject> {
            let before = object.value();
            let mut after = before.clone();
            read(&mut after);
            if after == before {
                object.clone()
            } else {
                Arc::new(StoredObject::from_value(
                    object.key.clone(),
                    object.rv,
                    &after,
                ))
            }
        };
        if let Some(objects) = self.objects.get_mut(rid) {
            for object in objects.values_mut() {
                *object = reread(object);
            }
        }
        for event in self.log.iter_mut().filter(|e| e.resource == rid) {
            event.object = reread(&event.object);
            event.prev = event.prev.as_ref().map(&mut reread);
            event.lines = Arc::default();
        }
    }
}
