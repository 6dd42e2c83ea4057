//! [`sink_for`]: the sink a reflector writes a `dyn Store` through, recognising the
//! queues of this module.

use std::any::Any;
use std::sync::Arc;

use super::{DeltaFifo, InOrderFifo};
use crate::object::Object;
use crate::store::{Store, StoreSink};

/// The sink a reflector writes `store` through: the [`DeltaFifo`]'s or the
/// [`InOrderFifo`]'s own hooks when `store` is one (as client-go asserts a store's type for its optional interfaces),
/// else whatever the store layer recognises (the `Indexer`'s hooks, or every hook's
/// default).
pub(crate) fn sink_for<K: Object>(store: Arc<dyn Store<K>>) -> Arc<dyn StoreSink<K>> {
    let any: Arc<dyn Any + Send + Sync> = store.clone();
    let any = match any.downcast::<DeltaFifo<K>>() {
        Ok(fifo) => return fifo,
        Err(any) => any,
    };
    match any.downcast::<InOrderFifo<K>>() {
        Ok(fifo) => fifo,
        Err(_) => crate::store::sink_for(store),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::store::{Indexer, Indexers};
    use crate::test_support::cm;

    /// A DeltaFifo handed over as a plain `dyn Store` keeps its own hooks (the
    /// informer's fast path), as does an Indexer.
    #[test]
    fn sink_for_recognises_the_fifo_and_the_indexer() {
        let fifo: Arc<dyn Store<ConfigMap>> = Arc::new(DeltaFifo::<ConfigMap>::new());
        assert!(sink_for(fifo).stream_list_page(&[cm(1, 1)], true).unwrap());

        let indexer = Arc::new(Indexer::<ConfigMap>::new(Indexers::new()));
        let a = cm(1, 1);
        indexer.add(a.clone()).unwrap();
        let sink = sink_for(indexer as Arc<dyn Store<ConfigMap>>);
        assert!(Arc::ptr_eq(&sink.prepare_listed(cm(1, 1), true), &a));
    }
}
