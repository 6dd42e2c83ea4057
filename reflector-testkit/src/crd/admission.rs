//! The admission chain of a custom-object write (create, update, patch, apply, `/scale`),
//! one function per step in the real server's order:
//!
//! 1. [`default_and_prune`]: the version's structural schema prunes the fields it does not
//!    declare and applies its `default`s;
//! 2. [`validate`]: the schema's validation, then its CEL rules (`x-kubernetes-validations`).
//!
//! Admission webhooks run around it, as on the real server: the mutating ones before (at
//! the write's admission point), the validating ones after, on the object as it would be
//! stored (see `webhooks`).

use serde_json::Value;

use crate::schema_validation::{self, FieldError};
use crate::state::{ResourceId, State};
use crate::status::ApiError;

/// One custom-object write as admission sees it.
pub(crate) struct Write<'a> {
    /// The resource written.
    pub rid: ResourceId,
    /// The object's name.
    pub name: &'a str,
    /// The stored object, on an update.
    pub old: Option<&'a Value>,
    /// The version's `openAPIV3Schema`.
    pub schema: &'a Value,
}

/// Runs the chain on `value`, which leaves it as it would be stored; the first step that
/// refuses the write answers for it.
pub(super) fn admit(state: &State, write: &Write<'_>, value: &mut Value) -> Result<(), ApiError> {
    default_and_prune(write, value);
    let errors = validate(write, value);
    if !errors.is_empty() {
        let info = &state.resources[write.rid];
        return Err(ApiError::invalid_fields(
            &info.kind,
            &info.group,
            write.name,
            &errors,
        ));
    }
    Ok(())
}

/// Prunes the fields the schema does not declare and applies its defaults.
fn default_and_prune(write: &Write<'_>, value: &mut Value) {
    // Validation is the next step's, on the defaulted object.
    let _ = schema_validation::admit(write.schema, value);
}

/// The schema's validation errors, then (unless one of them stops it, as the real
/// server's `hasBlockingErr`) those of its CEL rules.
fn validate(write: &Write<'_>, value: &Value) -> Vec<FieldError> {
    let mut errors = schema_validation::admit(write.schema, &mut value.clone()).errors;
    if !crate::cel_rules::has_rules(write.schema) {
        return errors;
    }
    let blocking = errors
        .iter()
        .any(|e| matches!(e.reason, "FieldValueTypeInvalid" | "FieldValueNotSupported"));
    if blocking {
        errors.push(FieldError::invalid(
            "<nil>",
            "\"null\"",
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
    } else {
        errors.extend(crate::cel_rules::validate(write.schema, value, write.old));
    }
    errors
}
