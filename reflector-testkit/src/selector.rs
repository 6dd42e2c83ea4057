//! Label and field selectors, parsed from query parameters and matched against objects.

use std::collections::BTreeMap;

use crate::status::ApiError;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelOp {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

/// A parsed label selector: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    requirements: Vec<(String, LabelOp)>,
}

impl LabelSelector {
    /// Parses the `labelSelector` grammar: comma-joined `k=v`, `k==v`, `k!=v`,
    /// `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>n`, `k<n`.
    pub(crate) fn parse(input: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for part in split_top_level(input) {
            let part = part.trim();
            if part.is_empty() {
                if input.trim().is_empty() {
                    continue;
                }
                return Err(label_error(
                    input,
                    "found ',', expected: !, identifier, or 'end of string'",
                ));
            }
            requirements.push(parse_requirement(part).map_err(|why| label_error(part, &why))?);
        }
        Ok(Self { requirements })
    }

    /// Whether the selector selects nothing-in-particular (matches everything).
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|(key, op)| {
            let value = labels.get(key);
            match op {
                LabelOp::Eq(v) => value == Some(v),
                LabelOp::NotEq(v) => value != Some(v),
                LabelOp::In(vs) => value.is_some_and(|x| vs.contains(x)),
                LabelOp::NotIn(vs) => value.is_none_or(|x| !vs.contains(x)),
                LabelOp::Exists => value.is_some(),
                LabelOp::DoesNotExist => value.is_none(),
                LabelOp::Gt(n) => value
                    .and_then(|x| x.parse::<i64>().ok())
                    .is_some_and(|x| x > *n),
                LabelOp::Lt(n) => value
                    .and_then(|x| x.parse::<i64>().ok())
                    .is_some_and(|x| x < *n),
            }
        })
    }
}

fn label_error(part: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {part:?}: {why}"))
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(input: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&input[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<(String, LabelOp), String> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        validate_key(key)?;
        return Ok((key.to_owned(), LabelOp::DoesNotExist));
    }
    for (token, ctor) in [("!=", 0), ("==", 1), ("=", 1), (">", 2), ("<", 3)] {
        if let Some((key, value)) = part.split_once(token) {
            let key = key.trim();
            let value = value.trim();
            validate_key(key)?;
            return match ctor {
                0 => validate_value(value)
                    .map(|()| (key.to_owned(), LabelOp::NotEq(value.to_owned()))),
                1 => {
                    validate_value(value).map(|()| (key.to_owned(), LabelOp::Eq(value.to_owned())))
                }
                2 => value
                    .parse()
                    .map(|n| (key.to_owned(), LabelOp::Gt(n)))
                    .map_err(|_| {
                        format!("for 'Gt', 'Lt' operators, the value must be an integer: {value}")
                    }),
                _ => value
                    .parse()
                    .map(|n| (key.to_owned(), LabelOp::Lt(n)))
                    .map_err(|_| {
                        format!("for 'Gt', 'Lt' operators, the value must be an integer: {value}")
                    }),
            };
        }
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default().trim();
    let rest = words.next().unwrap_or_default().trim();
    validate_key(key)?;
    if rest.is_empty() {
        return Ok((key.to_owned(), LabelOp::Exists));
    }
    let (is_in, list) = if let Some(list) = rest.strip_prefix("notin") {
        (false, list)
    } else if let Some(list) = rest.strip_prefix("in") {
        (true, list)
    } else {
        return Err(format!(
            "found '{rest}', expected: in, notin, =, ==, !=, gt, lt"
        ));
    };
    let list = list.trim();
    let inner = list
        .strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .ok_or_else(|| format!("found '{list}', expected: '('"))?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
    for v in &values {
        validate_value(v)?;
    }
    if values.iter().all(String::is_empty) {
        return Err("for 'in', 'notin' operators, values set can't be empty".to_owned());
    }
    Ok((
        key.to_owned(),
        if is_in {
            LabelOp::In(values)
        } else {
            LabelOp::NotIn(values)
        },
    ))
}

fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
    });
    if name_ok && prefix_ok {
        Ok(())
    } else {
        Err(format!(
            "invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn validate_value(value: &str) -> Result<(), String> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// A parsed field selector over `metadata.name` and `metadata.namespace`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    /// (field, wanted value, equal?) triples.
    requirements: Vec<(Field, String, bool)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
}

impl FieldSelector {
    /// Parses comma-joined `field=value`, `field==value`, `field!=value`.
    pub(crate) fn parse(input: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for part in input.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, value, equal) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, true)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {other}"
                    )));
                }
            };
            requirements.push((field, value.trim().to_owned(), equal));
        }
        Ok(Self { requirements })
    }

    /// Whether the selector selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with this name/namespace matches.
    pub(crate) fn matches(&self, name: &str, namespace: Option<&str>) -> bool {
        self.requirements.iter().all(|(field, value, equal)| {
            let actual = match field {
                Field::Name => name,
                Field::Namespace => namespace.unwrap_or(""),
            };
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_selector_operators() {
        let l = labels(&[("app", "web"), ("tier", "backend"), ("n", "5")]);
        let yes = [
            "app=web",
            "app==web",
            "app!=db",
            "app in (web,db)",
            "app notin (db)",
            "app",
            "!missing",
            "app=web,tier=backend",
            "n>3",
            "n<6",
            "",
        ];
        let no = [
            "app=db",
            "app!=web",
            "app in (db)",
            "app notin (web, db)",
            "missing",
            "!app",
            "app=web,tier=frontend",
            "n>5",
        ];
        for s in yes {
            assert!(
                LabelSelector::parse(s).expect(s).matches(&l),
                "{s} should match"
            );
        }
        for s in no {
            assert!(
                !LabelSelector::parse(s).expect(s).matches(&l),
                "{s} should not match"
            );
        }
    }

    #[test]
    fn label_selector_rejects_garbage() {
        for s in [
            "app in web",
            "=web",
            "app=we b",
            "a b c",
            "app in ()",
            "n>x",
            "app,,tier",
        ] {
            assert!(LabelSelector::parse(s).is_err(), "{s} should be rejected");
        }
    }

    #[test]
    fn field_selector_name_and_namespace() {
        let s =
            FieldSelector::parse("metadata.name=a,metadata.namespace!=kube-system").expect("valid");
        assert!(s.matches("a", Some("default")));
        assert!(!s.matches("a", Some("kube-system")));
        assert!(!s.matches("b", Some("default")));
        assert!(FieldSelector::parse("spec.nodeName=x").is_err());
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
