//! Label selectors, parsed from query parameters and matched against labels, with
//! the API server's validation of label keys and values.

use std::collections::BTreeSet;

use crate::labels::Labels;
use crate::status::{ApiError, go_quote};

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
    /// Parses the `labelSelector` grammar the way the real server's label parser does
    /// (same tokens, same precedence, same error texts): comma-joined `k=v`, `k==v`,
    /// `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>n`, `k<n`. Errors are 400s.
    pub(crate) fn parse(input: &str) -> Result<Self, ApiError> {
        let mut parser = Parser {
            items: lex(input),
            pos: 0,
        };
        parser
            .selector()
            .map(|requirements| Self { requirements })
            .map_err(ApiError::bad_request)
    }

    /// Whether the selector selects nothing-in-particular (matches everything).
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub(crate) fn matches(&self, labels: &Labels) -> bool {
        self.requirements.iter().all(|(key, op)| {
            let value = labels.get(key);
            match op {
                LabelOp::Eq(v) => value == Some(v.as_str()),
                LabelOp::NotEq(v) => value != Some(v.as_str()),
                LabelOp::In(vs) => value.is_some_and(|x| vs.iter().any(|v| v == x)),
                LabelOp::NotIn(vs) => value.is_none_or(|x| vs.iter().all(|v| v != x)),
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

/// A label-selector token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// A character sequence the lexer could not read as an operator.
    Error,
    End,
    ClosePar,
    Comma,
    Not,
    DoubleEquals,
    Equals,
    Greater,
    Ident,
    In,
    Less,
    NotEquals,
    NotIn,
    OpenPar,
}

/// Tokens spelled by fixed text.
fn keyword(text: &str) -> Option<Tok> {
    Some(match text {
        ")" => Tok::ClosePar,
        "," => Tok::Comma,
        "!" => Tok::Not,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::Greater,
        "in" => Tok::In,
        "<" => Tok::Less,
        "!=" => Tok::NotEquals,
        "notin" => Tok::NotIn,
        "(" => Tok::OpenPar,
        _ => return None,
    })
}

fn is_operator_char(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Splits a selector into tokens (ending with `Tok::End`). Operators are the longest run
/// of operator characters that still spells one; everything between blanks and operator
/// characters is an identifier (or the keywords `in`/`notin`). A NUL byte ends the input,
/// as in the real lexer.
fn lex(input: &str) -> Vec<(Tok, String)> {
    let bytes = input.as_bytes();
    let at = |i: usize| bytes.get(i).copied().filter(|b| *b != 0);
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        while at(i).is_some_and(is_blank) {
            i += 1;
        }
        let Some(first) = at(i) else {
            items.push((Tok::End, String::new()));
            return items;
        };
        if is_operator_char(first) {
            let start = i;
            let mut best: Option<(Tok, usize)> = None;
            while at(i).is_some_and(is_operator_char) {
                match keyword(&input[start..=i]) {
                    Some(tok) => best = Some((tok, i + 1)),
                    None if best.is_some() => break,
                    None => {}
                }
                i += 1;
            }
            match best {
                Some((tok, end)) => {
                    items.push((tok, input[start..end].to_owned()));
                    i = end;
                }
                None => items.push((
                    Tok::Error,
                    format!("error expected: keyword found '{}'", &input[start..i]),
                )),
            }
        } else {
            let start = i;
            while at(i).is_some_and(|b| !is_operator_char(b) && !is_blank(b)) {
                i += 1;
            }
            let text = &input[start..i];
            let tok = match keyword(text) {
                Some(tok @ (Tok::In | Tok::NotIn)) => tok,
                _ => Tok::Ident,
            };
            items.push((tok, text.to_owned()));
        }
    }
}

/// Where the parser is: after a key, `in`/`notin` are operators; elsewhere they are
/// plain identifiers (a value may be called `in`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Operator,
    Value,
}

struct Parser {
    items: Vec<(Tok, String)>,
    pos: usize,
}

/// What follows a key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Unset,
    Exists,
    DoesNotExist,
    In,
    NotIn,
    Equals,
    NotEquals,
    Greater,
    Less,
}

impl Parser {
    fn peek(&self, context: Context) -> (Tok, &str) {
        let (tok, text) = self
            .items
            .get(self.pos)
            .map_or((Tok::End, ""), |(t, s)| (*t, s.as_str()));
        match tok {
            Tok::In | Tok::NotIn if context == Context::Value => (Tok::Ident, text),
            _ => (tok, text),
        }
    }

    fn next(&mut self, context: Context) -> (Tok, String) {
        let (tok, text) = self.peek(context);
        let item = (tok, text.to_owned());
        self.pos += 1;
        item
    }

    fn selector(&mut self) -> Result<Vec<(String, LabelOp)>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, text) = self.peek(Context::Value);
            match tok {
                Tok::Ident | Tok::Not => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (tok, text) = self.next(Context::Value);
                    match tok {
                        Tok::End => return Ok(requirements),
                        Tok::Comma => {
                            let (tok, text) = self.peek(Context::Value);
                            if tok != Tok::Ident && tok != Tok::Not {
                                return Err(format!(
                                    "found '{text}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{text}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Tok::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{text}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<(String, LabelOp), String> {
        let (key, op) = self.key_and_implied_operator()?;
        let op = match op {
            Op::Exists | Op::DoesNotExist => op,
            _ => self.operator()?,
        };
        let values = match op {
            Op::Exists | Op::DoesNotExist => Vec::new(),
            Op::In | Op::NotIn => self.value_set()?,
            _ => vec![self.single_value()?],
        };
        build_requirement(key, op, values)
    }

    fn key_and_implied_operator(&mut self) -> Result<(String, Op), String> {
        let mut op = Op::Unset;
        let (mut tok, mut text) = self.next(Context::Value);
        if tok == Tok::Not {
            op = Op::DoesNotExist;
            (tok, text) = self.next(Context::Value);
        }
        if tok != Tok::Ident {
            return Err(format!("found '{text}', expected: identifier"));
        }
        let errors = qualified_name_errors(&text);
        if !errors.is_empty() {
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                go_quote(&text),
                errors.join("; ")
            ));
        }
        if matches!(self.peek(Context::Value).0, Tok::End | Tok::Comma) && op != Op::DoesNotExist {
            op = Op::Exists;
        }
        Ok((text, op))
    }

    fn operator(&mut self) -> Result<Op, String> {
        let (tok, text) = self.next(Context::Operator);
        Ok(match tok {
            Tok::In => Op::In,
            Tok::Equals | Tok::DoubleEquals => Op::Equals,
            Tok::Greater => Op::Greater,
            Tok::Less => Op::Less,
            Tok::NotIn => Op::NotIn,
            Tok::NotEquals => Op::NotEquals,
            _ => {
                return Err(format!(
                    "found '{text}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `( v1, v2, ... )`; empty entries are the empty value. Sorted, without duplicates.
    fn value_set(&mut self) -> Result<Vec<String>, String> {
        let (tok, text) = self.next(Context::Value);
        if tok != Tok::OpenPar {
            return Err(format!("found '{text}' expected: '('"));
        }
        let (tok, text) = self.peek(Context::Value);
        let text = text.to_owned();
        let values = match tok {
            Tok::Ident | Tok::Comma => {
                let values = self.value_list()?;
                if self.next(Context::Value).0 != Tok::ClosePar {
                    return Err(format!("found '{text}', expected: ')'"));
                }
                values
            }
            Tok::ClosePar => {
                self.next(Context::Value);
                std::iter::once(String::new()).collect()
            }
            _ => return Err(format!("found '{text}', expected: ',', ')' or identifier")),
        };
        Ok(values.into_iter().collect())
    }

    fn value_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            let (tok, text) = self.next(Context::Value);
            match tok {
                Tok::Ident => {
                    values.insert(text);
                    let (tok, text) = self.peek(Context::Value);
                    match tok {
                        Tok::Comma => {}
                        Tok::ClosePar => return Ok(values),
                        _ => return Err(format!("found '{text}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.peek(Context::Value).0 {
                        Tok::ClosePar => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Tok::Comma => {
                            self.next(Context::Value);
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{text}', expected: ',', or identifier")),
            }
        }
    }

    fn single_value(&mut self) -> Result<String, String> {
        if matches!(self.peek(Context::Value).0, Tok::End | Tok::Comma) {
            return Ok(String::new());
        }
        match self.next(Context::Value) {
            (Tok::Ident, text) => Ok(text),
            (_, text) => Err(format!("found '{text}', expected: identifier")),
        }
    }
}

/// Checks the values of a parsed requirement (the key is already checked), collecting
/// every problem as the real `NewRequirement` does.
fn build_requirement(
    key: String,
    op: Op,
    values: Vec<String>,
) -> Result<(String, LabelOp), String> {
    let mut errors: Vec<String> = Vec::new();
    let mut numbers = Vec::new();
    if matches!(op, Op::Greater | Op::Less) {
        for (i, value) in values.iter().enumerate() {
            match value.parse::<i64>() {
                Ok(n) => numbers.push(n),
                _ => errors.push(format!(
                    "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                    go_quote(value)
                )),
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        let problems = label_value_errors(value);
        if !problems.is_empty() {
            errors.push(format!(
                "values[{i}][{key}]: Invalid value: {}: {}",
                go_quote(value),
                problems.join("; ")
            ));
        }
    }
    errors.dedup();
    match errors.len() {
        0 => {}
        1 => return Err(errors.remove(0)),
        _ => return Err(format!("[{}]", errors.join(", "))),
    }
    let first = || values.first().cloned().unwrap_or_default();
    let op = match op {
        Op::Exists | Op::Unset => LabelOp::Exists,
        Op::DoesNotExist => LabelOp::DoesNotExist,
        Op::In => LabelOp::In(values),
        Op::NotIn => LabelOp::NotIn(values),
        Op::Equals => LabelOp::Eq(first()),
        Op::NotEquals => LabelOp::NotEq(first()),
        Op::Greater => LabelOp::Gt(numbers.first().copied().unwrap_or_default()),
        Op::Less => LabelOp::Lt(numbers.first().copied().unwrap_or_default()),
    };
    Ok((key, op))
}

/// The real validation's wording for a failed pattern, with examples.
fn pattern_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{pattern}')"));
    out
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.starts_with(alnum)
        && s.ends_with(alnum)
        && s.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
fn is_dns_subdomain(s: &str) -> bool {
    let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.split('.').all(|label| {
        label.starts_with(edge)
            && label.ends_with(edge)
            && label.chars().all(|c| edge(c) || c == '-')
    })
}

const QUALIFIED_NAME_PATTERN: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// The problems with a label key (a qualified name with an optional DNS-subdomain
/// prefix), in the real validation's wording; empty when it is valid.
fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 characters".to_owned());
                }
                if !is_dns_subdomain(prefix) {
                    errors.push(format!(
                        "prefix part {}",
                        pattern_error(
                            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                            "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
                            &["example.com"],
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                pattern_error(
                    QUALIFIED_NAME_MESSAGE,
                    QUALIFIED_NAME_PATTERN,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_owned());
    }
    if !is_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            pattern_error(
                QUALIFIED_NAME_MESSAGE,
                QUALIFIED_NAME_PATTERN,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// The problems with a label value, in the real validation's wording.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errors.push(pattern_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::tests::of as labels;

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
            "n>x",
            "app,,tier",
        ] {
            assert!(LabelSelector::parse(s).is_err(), "{s} should be rejected");
        }
    }
}
