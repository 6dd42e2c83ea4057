//! [`InformerFactory::reflected`]: a factory's informer with a reflected kind's
//! indexes. It lives beside [`Reflect`] (the informer layer never names the derive's
//! trait): an inherent method of the factory, defined here.

use std::fmt::Debug;

use serde::de::DeserializeOwned;

use super::Reflect;
use crate::informer::{InformerFactory, SharedIndexInformer};
use crate::store::Indexers;

impl InformerFactory {
    /// The shared informer for every `K` in every namespace (as
    /// [`InformerFactory::informer`]) with every index `K` declares through
    /// `#[derive(Reflect)]` added, unless an index of that name is already there.
    ///
    /// # Example
    /// ```no_run
    /// # use reflector::informer::InformerFactory;
    /// # use reflector::reflect::Reflect;
    /// # fn f<Widget: Reflect + serde::de::DeserializeOwned + std::fmt::Debug>(factory: &InformerFactory)
    /// # where Widget::DynamicType: Default + Clone + Send + Sync + 'static {
    /// let widgets = factory.reflected::<Widget>();
    /// let again = factory.reflected::<Widget>(); // the same informer, indexes added once
    /// # let _ = (widgets, again);
    /// # }
    /// ```
    #[must_use]
    pub fn reflected<K>(&self) -> SharedIndexInformer<K>
    where
        K: Reflect + DeserializeOwned + Debug,
        K::DynamicType: Default + Clone + Send + Sync + 'static,
    {
        let informer = self.informer::<K>();
        let present = informer.indexer().indexers();
        for (name, entry) in K::indexers().entries() {
            if present.contains(name) {
                continue;
            }
            let mut one = Indexers::new();
            one.insert_entry(name, entry.clone());
            // A concurrent `reflected` may have added it since: that is the same index.
            if let Err(e) = informer.add_indexers(one) {
                tracing::debug!(index = name, error = %e, "index already registered");
            }
        }
        informer
    }
}
