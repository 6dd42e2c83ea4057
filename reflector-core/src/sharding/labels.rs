//! The names a ring writes: its membership label, its assignment label, its lease
//! names, and the rules they must follow.

use super::ShardingError;

/// The label every membership Lease of a ring carries, valued with the ring's name.
pub(crate) const RING_LABEL: &str = "reflector.rs/ring";

/// The prefix of a ring's assignment label key; the ring's name is the key's name
/// part, so one object can be assigned in several rings (one per controller).
pub(crate) const ASSIGNMENT_LABEL_PREFIX: &str = "shard.reflector.rs/";

/// The shard name that would collide with the sharder election's lease.
pub(crate) const SHARDER: &str = "sharder";

/// `shard.reflector.rs/<ring>`: the label whose value names an object's shard.
pub(crate) fn assignment_label(ring: &str) -> String {
    format!("{ASSIGNMENT_LABEL_PREFIX}{ring}")
}

/// `shard.reflector.rs/<ring>-drain`: the annotation by which the sharder asks an
/// object's live shard to hand it over, valued with the shard it will move to.
pub(crate) fn drain_annotation(ring: &str) -> String {
    format!("{ASSIGNMENT_LABEL_PREFIX}{ring}-drain")
}

/// `<ring>-<shard>`: the membership Lease of one shard.
pub(crate) fn member_lease(ring: &str, shard: &str) -> String {
    format!("{ring}-{shard}")
}

/// `<ring>-sharder`: the Lease of the ring's sharder election.
pub(crate) fn sharder_lease(ring: &str) -> String {
    member_lease(ring, SHARDER)
}

/// Checks that `name` is a DNS-1123 label, as the API server checks label values,
/// label-key name parts and (more loosely) object names.
pub(crate) fn validate(what: &'static str, name: &str) -> Result<(), ShardingError> {
    let invalid = |reason| {
        Err(ShardingError::InvalidName {
            what,
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return invalid("it is empty");
    }
    if name.len() > 63 {
        return invalid("it is longer than 63 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return invalid("only lowercase letters, digits and '-' are allowed");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return invalid("it must start and end with a letter or digit");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_1123_labels() {
        for ok in ["a", "widgets", "shard-0", "0", &"x".repeat(63)] {
            validate("shard", ok).unwrap();
        }
        for bad in [
            "",
            "Upper",
            "under_score",
            "dot.ted",
            "-a",
            "a-",
            &"x".repeat(64),
        ] {
            assert!(
                matches!(
                    validate("shard", bad),
                    Err(ShardingError::InvalidName { what: "shard", .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn lease_and_label_names() {
        assert_eq!(assignment_label("widgets"), "shard.reflector.rs/widgets");
        assert_eq!(
            drain_annotation("widgets"),
            "shard.reflector.rs/widgets-drain"
        );
        assert_eq!(member_lease("widgets", "a"), "widgets-a");
        assert_eq!(sharder_lease("widgets"), "widgets-sharder");
    }
}
