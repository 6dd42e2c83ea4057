//! Lists a whole collection page by page, as client-go's `tools/pager`.

use std::sync::Arc;

use kube::api::{ListParams, ObjectList};

use crate::listwatch::{ListWatchError, ListerWatcher};

use super::stats::{StatsCounters, bump};

/// A whole list: its items, the resource version of its snapshot, and whether the
/// server answered in more than one page.
pub(crate) struct FullList<K> {
    pub(crate) items: Vec<Arc<K>>,
    pub(crate) resource_version: String,
    pub(crate) paginated: bool,
}

/// Lists everything at `resource_version`, in pages of `page_size` (`None`: one
/// request without a limit). Each decoded page goes to `keep` as it arrives, with
/// whether it starts a list (the first page, or the one page of a list started over);
/// the returned items are what the whole list keeps (the reflector swaps unchanged
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
    K: Clone,
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
        let page = match lw.list(&params).await {
            Ok(page) => page,
            Err(e) if e.is_expired() && params.continue_token.is_some() => {
                tracing::debug!("continue token expired; listing everything at once");
                let mut full = requested.clone();
                full.limit = None;
                bump(&stats.list_pages);
                let list = lw.list(&full).await?;
                return Ok(into_full(
                    Vec::new(),
                    list,
                    None,
                    paginated,
                    true,
                    &mut keep,
                ));
            }
            Err(e) => return Err(e),
        };
        let cont = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        let first = params.continue_token.is_none();
        let Some(token) = cont else {
            return Ok(into_full(
                items, page, first_rv, paginated, first, &mut keep,
            ));
        };
        if first_rv.is_none() {
            first_rv = page.metadata.resource_version.clone();
        }
        items.extend(keep(page.items, first));
        paginated = true;
        params.continue_token = Some(token);
        params.resource_version = None;
        params.version_match = None;
    }
}

fn into_full<K>(
    mut items: Vec<Arc<K>>,
    last: ObjectList<K>,
    first_rv: Option<String>,
    paginated: bool,
    first: bool,
    keep: &mut impl FnMut(Vec<K>, bool) -> Vec<Arc<K>>,
) -> FullList<K>
where
    K: Clone,
{
    let resource_version = first_rv
        .or_else(|| last.metadata.resource_version.clone())
        .unwrap_or_default();
    items.extend(keep(last.items, first));
    FullList {
        items,
        resource_version,
        paginated,
    }
}
