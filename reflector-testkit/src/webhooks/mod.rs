//! Webhooks, called as the real API server calls them.
//!
//! * Admission: `admissionregistration.k8s.io/v1` `MutatingWebhookConfiguration`s and
//!   `ValidatingWebhookConfiguration`s are stored like any built-in kind
//!   ([`configuration`] fills in the real defaults). A write whose admission point
//!   ([`capture`]) matches a webhook's rules ([`rules`]) is run around the webhooks
//!   ([`dispatch`]): the mutating ones in order, each patching what the previous one left
//!   (and those with `reinvocationPolicy: IfNeeded` once more if a later one changed it,
//!   [`mutating`]), then the object's own defaulting and validation, then the validating
//!   ones ([`admission`]). A webhook whose rules name another version of the written CRD is
//!   called for that version under `matchPolicy: Equivalent` ([`equivalent`]), the write
//!   told of as the client made it ([`attributes`]).
//! * Conversion: a CRD with `conversion.strategy: Webhook` stores its objects in its
//!   storage version and converts them through its webhook when they are read, listed,
//!   watched or written in another version ([`conversion`]).
//!
//! Every call is an HTTPS `POST` verified against the configuration's `caBundle`
//! ([`call`], [`tls`]).

pub(crate) mod admission;
pub(crate) mod attributes;
pub(crate) mod call;
pub(crate) mod capture;
pub(crate) mod configuration;
pub(crate) mod conversion;
pub(crate) mod converted;
pub(crate) mod dispatch;
pub(crate) mod equivalent;
pub(crate) mod match_conditions;
pub(crate) mod mutating;
pub(crate) mod rules;
pub(crate) mod tls;

pub(crate) use dispatch::{WriteRequest, admit};
