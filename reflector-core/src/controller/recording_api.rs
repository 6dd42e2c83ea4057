//! [`RecordingApi`]: a [`kube::Api`] whose writes a reconcile records for
//! read-your-writes.

use std::fmt::{self, Debug};
use std::ops::Deref;

use either::Either;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{PartialObjectMeta, Status};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::consistency::WriteLog;
use super::kind_key::KindKey;

/// A [`kube::Api`] handed to one reconcile by [`Request::api`](super::Request::api)
/// or [`Request::recording`](super::Request::recording): each write through it records the
/// resourceVersion the API server answered with, so that the next reconcile of the
/// request's key waits until the controller's cache of the written kind has it
/// ([`read_your_writes`](super::Controller::read_your_writes), on by default).
/// Nothing else to call.
///
/// The writes are kube's, with the same parameters and results: [`create`](Self::create),
/// [`replace`](Self::replace), [`patch`](Self::patch) (merge, JSON, strategic and
/// server-side apply), [`patch_metadata`](Self::patch_metadata),
/// [`delete`](Self::delete) (recorded when answered with the object, which still has
/// finalizers to run or is returned by its resource; an answer that is a `Status`
/// records nothing), the `status` and `scale` subresources and
/// [`patch_subresource`](Self::patch_subresource) /
/// [`replace_subresource`](Self::replace_subresource). Reads (`get`, `list`, …) go to
/// the wrapped `Api` through `Deref`; so do the writes not listed here
/// (`create_subresource`, `delete_collection`, `entry`), which record nothing. Dry runs
/// record nothing.
///
/// A write is recorded against every cache of the controller holding its kind (group
/// and resource: a `K`, `PartialObjectMeta<K>` or `DynamicObject` informer alike; one
/// of one namespace only for writes in that namespace), primary or
/// [`owns`](super::Controller::owns). Not recorded: a kind the controller has no such
/// informer for, a write for a request with no object (a deletion) or made by hand
/// ([`Request::new`](super::Request::new)), and writes of a controller with
/// `read_your_writes(false)`; the writes themselves are made all the same.
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use kube::api::{Patch, PatchParams};
/// use reflector::controller::{Action, Request};
///
/// async fn reconcile(req: Request<ConfigMap>, client: Arc<kube::Client>) -> Result<Action, kube::Error> {
///     if req.object.is_none() {
///         return Ok(Action::done());
///     }
///     // The request's namespace; its next reconcile sees the controller's caches
///     // at or past both writes.
///     let config_maps = req.api::<ConfigMap>(&client);
///     let patch = serde_json::json!({ "data": { "seen": "yes" } });
///     config_maps.patch(req.key.name(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
///     let secrets = req.api::<Secret>(&client);
///     let secret = serde_json::json!({
///         "apiVersion": "v1", "kind": "Secret",
///         "metadata": { "name": req.key.name() },
///         "stringData": { "token": "t" },
///     });
///     let apply = PatchParams::apply("my-controller").force();
///     secrets.patch(req.key.name(), &apply, &Patch::Apply(&secret)).await?;
///     Ok(Action::done())
/// }
/// ```
pub struct RecordingApi<C> {
    api: Api<C>,
    /// What `api` writes.
    kind: KindKey,
    /// `None`: nothing is recorded (see the type's docs).
    log: Option<WriteLog>,
}

impl<C: Resource + 'static> RecordingApi<C> {
    /// Writes through `api`, recorded in `log`.
    pub(super) fn new(api: Api<C>, log: Option<WriteLog>) -> Self {
        RecordingApi {
            kind: KindKey::of_api(&api),
            api,
            log,
        }
    }
}

impl<C> RecordingApi<C> {
    /// Records an answer (`meta` with its resourceVersion), unless a dry run.
    fn record(&self, dry_run: bool, meta: &ObjectMeta) {
        if let (false, Some(log)) = (dry_run, &self.log) {
            log.wrote(&self.kind, meta);
        }
    }

    /// Records `answer` if it is an object, and hands it back.
    fn recorded<T: Resource>(&self, dry_run: bool, answer: kube::Result<T>) -> kube::Result<T> {
        if let Ok(written) = &answer {
            self.record(dry_run, written.meta());
        }
        answer
    }
}

impl<C> RecordingApi<C>
where
    C: Resource + Clone + DeserializeOwned + Debug,
{
    /// Creates `data`, as [`Api::create`], and records the created object.
    ///
    /// # Errors
    /// As [`Api::create`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn create(&self, pp: &PostParams, data: &C) -> kube::Result<C>
    where
        C: Serialize,
    {
        self.recorded(pp.dry_run, self.api.create(pp, data).await)
    }

    /// Replaces the object `name`, as [`Api::replace`], and records the answer.
    ///
    /// # Errors
    /// As [`Api::replace`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn replace(&self, name: &str, pp: &PostParams, data: &C) -> kube::Result<C>
    where
        C: Serialize,
    {
        self.recorded(pp.dry_run, self.api.replace(name, pp, data).await)
    }

    /// Patches the object `name` (merge, JSON, strategic merge or server-side apply),
    /// as [`Api::patch`], and records the answer.
    ///
    /// # Errors
    /// As [`Api::patch`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn patch<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<C> {
        self.recorded(pp.dry_run, self.api.patch(name, pp, patch).await)
    }

    /// Patches the metadata of the object `name`, as [`Api::patch_metadata`], and
    /// records the answer.
    ///
    /// # Errors
    /// As [`Api::patch_metadata`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn patch_metadata<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<PartialObjectMeta<C>> {
        self.recorded(pp.dry_run, self.api.patch_metadata(name, pp, patch).await)
    }

    /// Deletes the object `name`, as [`Api::delete`]; an answer that is the object
    /// (being deleted, with finalizers left) is recorded, a `Status` is not.
    ///
    /// # Errors
    /// As [`Api::delete`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> kube::Result<Either<C, Status>> {
        let answer = self.api.delete(name, dp).await;
        if let Ok(Either::Left(object)) = &answer {
            self.record(dp.dry_run, object.meta());
        }
        answer
    }

    /// Patches the `status` subresource of `name`, as [`Api::patch_status`], and
    /// records the answer.
    ///
    /// # Errors
    /// As [`Api::patch_status`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn patch_status<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<C> {
        self.recorded(pp.dry_run, self.api.patch_status(name, pp, patch).await)
    }

    /// Replaces the `status` subresource of `name`, as [`Api::replace_status`], and
    /// records the answer.
    ///
    /// # Errors
    /// As [`Api::replace_status`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn replace_status(&self, name: &str, pp: &PostParams, data: &C) -> kube::Result<C>
    where
        C: Serialize,
    {
        self.recorded(pp.dry_run, self.api.replace_status(name, pp, data).await)
    }

    /// Patches the `scale` subresource of `name`, as [`Api::patch_scale`], and
    /// records the answer (a `Scale` carries its object's resourceVersion).
    ///
    /// # Errors
    /// As [`Api::patch_scale`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn patch_scale<P: Serialize + Debug>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<Scale> {
        self.recorded(pp.dry_run, self.api.patch_scale(name, pp, patch).await)
    }

    /// Replaces the `scale` subresource of `name`, as [`Api::replace_scale`], and
    /// records the answer.
    ///
    /// # Errors
    /// As [`Api::replace_scale`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn replace_scale(
        &self,
        name: &str,
        pp: &PostParams,
        data: &Scale,
    ) -> kube::Result<Scale> {
        self.recorded(pp.dry_run, self.api.replace_scale(name, pp, data).await)
    }

    /// Patches the subresource `subresource_name` of `name`, as
    /// [`Api::patch_subresource`], and records the answer.
    ///
    /// # Errors
    /// As [`Api::patch_subresource`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn patch_subresource<P: Serialize + Debug>(
        &self,
        subresource_name: &str,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<C> {
        let answer = self
            .api
            .patch_subresource(subresource_name, name, pp, patch)
            .await;
        self.recorded(pp.dry_run, answer)
    }

    /// Replaces the subresource `subresource_name` of `name`, as
    /// [`Api::replace_subresource`], and records the answer.
    ///
    /// # Errors
    /// As [`Api::replace_subresource`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; a write the server made then is not
    /// recorded.
    pub async fn replace_subresource<I: Serialize>(
        &self,
        subresource_name: &str,
        name: &str,
        pp: &PostParams,
        data: &I,
    ) -> kube::Result<C> {
        let answer = self
            .api
            .replace_subresource(subresource_name, name, pp, data)
            .await;
        self.recorded(pp.dry_run, answer)
    }
}

/// Reads, and the writes that record nothing, go to the wrapped `Api`.
impl<C> Deref for RecordingApi<C> {
    type Target = Api<C>;

    fn deref(&self) -> &Api<C> {
        &self.api
    }
}

impl<C> Clone for RecordingApi<C>
where
    Api<C>: Clone,
{
    fn clone(&self) -> Self {
        RecordingApi {
            api: self.api.clone(),
            kind: self.kind.clone(),
            log: self.log.clone(),
        }
    }
}

impl<C: Resource> Debug for RecordingApi<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordingApi")
            .field("url", &self.api.resource_url())
            .field("records_writes", &self.log.is_some())
            .finish()
    }
}
