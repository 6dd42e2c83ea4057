//! Lists a whole collection page by page, as client-go's `tools/pager`.

use std::sync::Arc;

use kube::api::ListParams;

use crate::listwatch::{ListWatchError, ListerWatcher, list_page};
use crate::object::Object;

use super::stats::{StatsCounters, bump};

/// A whole list: its items, the resource version of its snapshot, and whether the
/// server answered in more than one page.
pub(crate) struct FullList<K> {
    pub(crate) items: Vec<Arc<K>>,
    pub(crate) resource_version: String,
    pub(crate) paginated: bool,
}

/// Lists everything at `resource_version`, in pages of `page_size` (`None`: one
/// request without a limit). Each decoded page (or, from a lister-watcher that streams
/// list bodies, each batch of a page decoded as its bytes arrive) goes to `keep` as it
/// arrives, with whether it starts a list (the first page, or the one page of a list
/// started over); the returned items are what the whole list keeps (the reflector swaps unchanged
/// objects for the cached copy there, so decoded duplicates are freed page by page,
/// and may hand a page on to the store at once and keep nothing of it).
///
/// Continuation pages are requested with no resource version, as the API server
/// requires. If a continuation page is answered `410 Expired`, the whole list is
/// requested again at the original resource version without a limit (client-go's
/// `FullListIfExpired`).
pub(crate) async fn list_all<K, L>(
    lw: &L,
    base: &ListParams,
    resource_version: &str,
    page_size: Option<u32>,
    stats: &StatsCounters,
    mut keep: impl FnMut(Vec<K>, bool) -> Vec<Arc<K>>,
) -> Result<FullList<K>, ListWatchError>
where
    K: Object,
    L: ListerWatcher<K>,
{
    let mut params = base.clone();
    params.limit = page_size;
    params.continue_token = None;
    params.resource_version = (!resource_version.is_empty()).then(|| resource_version.to_owned());
    let requested = params.clone();

    let mut items: Vec<Arc<K>> = Vec::new();
    // The snapshot's resource version, as the first page states it (client-go's pager
    // keeps the first page's; every page of one list carries the same).
    let mut first_rv: Option<String> = None;
    let mut paginated = false;
    loop {
        bump(&stats.list_pages);
        let first = params.continue_token.is_none();
        let meta = match list_page(lw, &params, first, &mut keep, &mut items).await {
            Ok(meta) => meta,
            Err(e) if e.is_expired() && !first => {
                tracing::debug!("continue token expired; listing everything at once");
                let mut full = requested.clone();
                full.limit = None;
                bump(&stats.list_pages);
                let mut fresh = Vec::new();
                let meta = list_page(lw, &full, true, &mut keep, &mut fresh).await?;
                return Ok(FullList {
                    items: fresh,
                    resource_version: meta.resource_version.unwrap_or_default(),
                    paginated,
                });
            }
            Err(e) => return Err(e),
        };
        if first_rv.is_none() {
            first_rv = meta.resource_version;
        }
        let Some(token) = meta.continue_.filter(|c| !c.is_empty()) else {
            return Ok(FullList {
                items,
                resource_version: first_rv.unwrap_or_default(),
                paginated,
            });
        };
        paginated = true;
        params.continue_token = Some(token);
        params.resource_version = None;
        params.version_match = None;
    }
}
