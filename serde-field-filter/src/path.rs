//! Paths: their syntax, parsed into segments, and the trie a filter keeps them in.

use crate::FieldFilterError;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// A map key.
    Key(String),
    /// Every element of a sequence.
    Items,
}

/// A node of the path trie: what happens at one position of the document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Node {
    /// The value here is skipped entirely.
    pub(crate) skip: bool,
    /// Map keys with something filtered at or under them (few: searched linearly).
    pub(crate) fields: Vec<(Box<str>, Node)>,
    /// What applies to every element when the value here is a sequence.
    pub(crate) items: Option<Box<Node>>,
}

impl Node {
    pub(crate) fn field(&self, key: &str) -> Option<&Node> {
        self.fields
            .iter()
            .find(|(k, _)| k.as_ref() == key)
            .map(|(_, n)| n)
    }

    pub(crate) fn insert(&mut self, path: &[Segment]) {
        let Some((first, rest)) = path.split_first() else {
            self.skip = true;
            return;
        };
        let child = match first {
            Segment::Key(k) => {
                let pos = match self.fields.iter().position(|(f, _)| f.as_ref() == k) {
                    Some(pos) => pos,
                    None => {
                        self.fields.push((k.as_str().into(), Node::default()));
                        self.fields.len() - 1
                    }
                };
                &mut self.fields[pos].1
            }
            Segment::Items => self.items.get_or_insert_with(Box::default),
        };
        child.insert(rest);
    }

    pub(crate) fn merge(&mut self, other: &Node) {
        self.skip |= other.skip;
        for (key, theirs) in &other.fields {
            match self.fields.iter_mut().find(|(k, _)| k == key) {
                Some((_, ours)) => ours.merge(theirs),
                None => self.fields.push((key.clone(), theirs.clone())),
            }
        }
        if let Some(theirs) = &other.items {
            self.items.get_or_insert_with(Box::default).merge(theirs);
        }
    }

    /// Nothing at or under this node is filtered.
    pub(crate) fn is_empty(&self) -> bool {
        !self.skip && self.fields.is_empty() && self.items.is_none()
    }
}

/// Parses one path into segments.
pub(crate) fn parse_path(path: &str) -> Result<Vec<Segment>, FieldFilterError> {
    let err = |at: usize, problem: &'static str| FieldFilterError::InvalidPath {
        path: path.to_owned(),
        at,
        problem,
    };
    if path.is_empty() {
        return Err(err(0, "empty path"));
    }
    let bytes = path.as_bytes();
    let mut segments = Vec::new();
    let mut i = 0;
    // Whether the next segment may be a bare key (at the start, or after a dot).
    let mut expect_key = true;
    while i < bytes.len() {
        match bytes[i] {
            b'[' => {
                let rest = &path[i..];
                if rest.starts_with("[*]") {
                    segments.push(Segment::Items);
                    i += 3;
                } else if let Some(quoted) = rest.strip_prefix("[\"") {
                    let (key, used) =
                        parse_quoted(quoted).map_err(|(off, p)| err(i + 2 + off, p))?;
                    segments.push(Segment::Key(key));
                    i += 2 + used;
                    if bytes.get(i) != Some(&b']') {
                        return Err(err(i, "expected `]` after a quoted key"));
                    }
                    i += 1;
                } else {
                    return Err(err(i, "expected `[*]` or `[\"key\"]`"));
                }
                expect_key = false;
            }
            b'.' => {
                if expect_key {
                    return Err(err(i, "empty key"));
                }
                expect_key = true;
                i += 1;
                if i == bytes.len() {
                    return Err(err(i, "path ends with `.`"));
                }
            }
            b']' | b'"' => return Err(err(i, "unexpected character outside brackets")),
            _ => {
                if !expect_key {
                    return Err(err(i, "expected `.` or `[` between segments"));
                }
                let start = i;
                while i < bytes.len() && !matches!(bytes[i], b'.' | b'[' | b']' | b'"') {
                    i += 1;
                }
                segments.push(Segment::Key(path[start..i].to_owned()));
                expect_key = false;
            }
        }
    }
    Ok(segments)
}

/// Parses the inside of a quoted key up to (and including) its closing quote; returns
/// the key and the bytes used.
pub(crate) fn parse_quoted(s: &str) -> Result<(String, usize), (usize, &'static str)> {
    let mut key = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                if key.is_empty() {
                    return Err((i, "empty quoted key"));
                }
                return Ok((key, i + 1));
            }
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => key.push(e),
                Some((j, _)) => return Err((j, "only `\\\"` and `\\\\` escapes are allowed")),
                None => return Err((i + 1, "unterminated quoted key")),
            },
            c => key.push(c),
        }
    }
    Err((s.len(), "unterminated quoted key"))
}
