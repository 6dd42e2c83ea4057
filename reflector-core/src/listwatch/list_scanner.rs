//! Finds the items of a list body in its bytes as they arrive.
//!
//! A list response is one JSON object: `{"kind":..,"apiVersion":..,"metadata":{..},
//! "items":[{..},{..},..]}` (the API server writes `metadata` before `items`; any order
//! is accepted). The [`ListScanner`] reads the body chunk by chunk and hands out each
//! element of `items` as a byte slice as soon as its last byte is in, so items can be
//! decoded while the rest of the body is still on the wire and the whole body is never
//! held: the scanner keeps only the unfinished element (or top-level member) and the
//! top-level members other than `items` (the "head": kind, apiVersion, metadata),
//! which it re-assembles into a small JSON object for the caller to decode.
//!
//! The scan is string- and escape-aware: brackets inside strings are not structure, and
//! an escaped quote does not end a string, wherever the chunk boundaries fall. It checks
//! the list's own structure (the top-level object, the commas and brackets of `items`);
//! each element and the head are checked by the decoder that reads them.

use serde::de::Error as _;

use super::ListWatchError;

/// Told each element of `items` (its index and bytes) as the scan completes it; an
/// error stops the scan.
pub(crate) type OnItem<'f> = dyn FnMut(usize, &[u8]) -> Result<(), ListWatchError> + 'f;

/// Where the scan is in the list's top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening `{`.
    Start,
    /// After `{` (`first`) or `,`: a key next (or `}` right after `{`).
    KeyNext { first: bool },
    /// Inside a top-level key, from its opening quote at `mark`.
    InKey,
    /// After a key, before its `:`.
    Colon,
    /// After `:`, before the value's first byte.
    ValueNext,
    /// Inside a top-level value (not `items`), whose member starts at `mark`.
    InValue,
    /// After a top-level value: `,` or `}` next.
    AfterValue,
    /// Inside `items`, after `[` (`first`) or `,`: an element next (or `]` after `[`).
    ItemNext { first: bool },
    /// Inside an element of `items`, from `mark`.
    InItem,
    /// After an element: `,` or `]` next.
    AfterItem,
    /// After the closing `}`: only whitespace may follow.
    End,
}

/// How far into one JSON value the scan is (an element of `items` or a top-level
/// value): nesting depth, and whether it is inside a string or a bare scalar.
#[derive(Debug, Clone, Copy, Default)]
struct ValueScan {
    /// Open `{`/`[` of the value.
    depth: u32,
    /// Inside a string.
    in_string: bool,
    /// The previous byte was a backslash inside a string (the chunk ended there).
    escape: bool,
    /// A bare scalar (`12`, `true`, `null`): it ends before `,`, `]`, `}` or whitespace.
    scalar: bool,
}

impl ValueScan {
    /// Starts a value at its first byte `b` (not yet consumed).
    fn start(b: u8) -> Self {
        ValueScan {
            scalar: !matches!(b, b'{' | b'[' | b'"'),
            ..ValueScan::default()
        }
    }

    /// Scans `buf` from `*pos`. Returns the end of the value (exclusive) once it is
    /// complete; otherwise `None` with `*pos` at the end of `buf`.
    fn step(&mut self, buf: &[u8], pos: &mut usize) -> Option<usize> {
        let mut i = *pos;
        if self.scalar {
            while i < buf.len() {
                if matches!(buf[i], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                    *pos = i;
                    return Some(i);
                }
                i += 1;
            }
            *pos = i;
            return None;
        }
        loop {
            if self.in_string {
                if self.escape {
                    if i >= buf.len() {
                        *pos = i;
                        return None;
                    }
                    self.escape = false;
                    i += 1;
                }
                match quote_or_backslash(&buf[i..]) {
                    None => {
                        *pos = buf.len();
                        return None;
                    }
                    Some(off) => {
                        i += off;
                        if buf[i] == b'\\' {
                            self.escape = true;
                        } else {
                            self.in_string = false;
                            if self.depth == 0 {
                                *pos = i + 1;
                                return Some(i + 1);
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            let Some(&b) = buf.get(i) else {
                *pos = i;
                return None;
            };
            i += 1;
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        *pos = i;
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Bytes examined eight at a time before a string's search goes to `memchr`: most
/// strings of an object (keys, names, versions) end within them, and `memchr`'s
/// set-up costs more than the scan of so short a run.
const SHORT_RUN: usize = 32;

/// `0x01` in every byte of a word.
const LOW_BITS: u64 = u64::from_le_bytes([0x01; 8]);
/// `0x80` in every byte of a word.
const HIGH_BITS: u64 = u64::from_le_bytes([0x80; 8]);

/// The high bit set in each byte of `word` that is zero, and possibly in bytes above
/// the lowest one that is (the subtraction's borrow): only the lowest set bit is exact.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(LOW_BITS) & !word & HIGH_BITS
}

/// Where the first `"` or `\` of `hay` is: the end of a string, or an escape in it.
fn quote_or_backslash(hay: &[u8]) -> Option<usize> {
    let short = hay.len().min(SHORT_RUN);
    let mut words = hay[..short].chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let word = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        let found = zero_bytes(word ^ (LOW_BITS * u64::from(b'"')))
            | zero_bytes(word ^ (LOW_BITS * u64::from(b'\\')));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    if let Some(off) = words
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\')
    {
        return Some(at + off);
    }
    memchr::memchr2(b'"', b'\\', &hay[short..]).map(|off| short + off)
}

/// Finds the elements of a list body's `items` as the body's chunks arrive.
///
///
/// Feed it the body's chunks in order ([`ListScanner::feed`]), then
/// [`ListScanner::finish`] for the head.
#[derive(Debug)]
pub(crate) struct ListScanner {
    /// The bytes not yet done with: from the unfinished member or element on.
    buf: Vec<u8>,
    /// Where the scan resumes in `buf`.
    pos: usize,
    /// Where the unfinished member (key included) or element starts in `buf`.
    mark: usize,
    /// Bytes dropped from the front of `buf` so far (for offsets in errors).
    dropped: usize,
    state: State,
    /// The value or element being scanned.
    value: ValueScan,
    /// `{` and the top-level members other than `items`, comma-separated.
    head: Vec<u8>,
    /// Whether the current top-level key is `items`.
    key_is_items: bool,
    /// Whether the `items` array has opened.
    items_open: bool,
    /// Elements of `items` handed out so far.
    count: usize,
}

impl Default for ListScanner {
    fn default() -> Self {
        ListScanner {
            buf: Vec::new(),
            pos: 0,
            mark: 0,
            dropped: 0,
            state: State::Start,
            value: ValueScan::default(),
            head: b"{".to_vec(),
            key_is_items: false,
            items_open: false,
            count: 0,
        }
    }
}

/// A decode error of the list's own structure, at byte `offset` of the body.
fn structure_error(what: &str, offset: usize) -> ListWatchError {
    ListWatchError::Decode {
        what: "list",
        source: serde_json::Error::custom(format_args!("{what} at byte {offset} of the body")),
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl ListScanner {
    /// Whether the `items` array has opened: the members before it are in the head.
    pub(crate) fn items_open(&self) -> bool {
        self.items_open
    }

    /// The top-level members other than `items` read so far, as one JSON object.
    pub(crate) fn head_so_far(&self) -> Vec<u8> {
        let mut head = self.head.clone();
        head.push(b'}');
        head
    }

    /// Scans `chunk`, handing each element of `items` it completes to `item` with its
    /// index, in order. Elements that end in `chunk` are handed out from it, uncopied;
    /// only an element (or member) that goes on past it is copied, to be completed by
    /// the next chunks.
    ///
    /// # Errors
    /// [`ListWatchError::Decode`] when the body is not a list object (a stray byte in
    /// the structure), or the first error `item` returns.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        item: &mut OnItem<'_>,
    ) -> Result<(), ListWatchError> {
        let mut chunk = chunk;
        if self.state == State::InItem && !self.buf.is_empty() {
            // An element begun in an earlier chunk: only its rest is copied.
            let mut at = 0;
            let Some(end) = self.value.step(chunk, &mut at) else {
                self.buf.extend_from_slice(chunk);
                self.pos = self.buf.len();
                return Ok(());
            };
            self.buf.extend_from_slice(&chunk[..end]);
            let index = self.count;
            self.count += 1;
            self.state = State::AfterItem;
            item(index, &self.buf[self.mark..])?;
            self.dropped += self.buf.len();
            self.buf.clear();
            (self.pos, self.mark) = (0, 0);
            chunk = &chunk[end..];
        }
        if self.buf.is_empty() {
            // Nothing pending: the chunk is scanned where it is, and only its
            // unfinished tail is kept.
            self.scan(chunk, item)?;
            let keep_from = self.keep_from();
            self.buf.extend_from_slice(&chunk[keep_from..]);
            self.forget(keep_from);
        } else {
            // A key or a member of the head spans the chunks (small and rare).
            let mut buf = std::mem::take(&mut self.buf);
            buf.extend_from_slice(chunk);
            let scanned = self.scan(&buf, item);
            let keep_from = self.keep_from();
            buf.drain(..keep_from);
            self.buf = buf;
            scanned?;
            self.forget(keep_from);
        }
        Ok(())
    }

    /// Where what is unfinished begins in the bytes just scanned: the current member
    /// or element, or nothing (the scan position).
    fn keep_from(&self) -> usize {
        match self.state {
            State::InKey | State::Colon | State::ValueNext | State::InValue | State::InItem => {
                self.mark
            }
            _ => self.pos,
        }
    }

    /// Moves the scan's positions past the `n` bytes just dropped from the front.
    fn forget(&mut self, n: usize) {
        self.dropped += n;
        self.pos -= n;
        self.mark = self.mark.saturating_sub(n);
    }

    /// Ends the body: the head (the top-level members other than `items`) as one JSON
    /// object, for the caller to decode.
    ///
    /// # Errors
    /// [`ListWatchError::Decode`] when the body ended before its closing `}` (naming
    /// the element it ended in, if any).
    pub(crate) fn finish(mut self) -> Result<Vec<u8>, ListWatchError> {
        let offset = self.dropped + self.buf.len();
        match self.state {
            State::End => {
                self.head.push(b'}');
                Ok(self.head)
            }
            State::InItem => Err(structure_error(
                &format!("the body ended inside item {}", self.count),
                offset,
            )),
            State::Start if offset == 0 => Err(structure_error("the body is empty", 0)),
            _ => Err(structure_error(
                "the body ended before the list did",
                offset,
            )),
        }
    }

    fn error(&self, what: &str) -> ListWatchError {
        structure_error(what, self.dropped + self.pos)
    }

    /// Scans `buf` (the bytes from the first one not yet done with, at body offset
    /// `dropped`) from `pos`.
    fn scan(&mut self, buf: &[u8], item: &mut OnItem<'_>) -> Result<(), ListWatchError> {
        while self.pos < buf.len() {
            match self.state {
                State::InValue | State::InItem => {
                    let Some(end) = self.value.step(buf, &mut self.pos) else {
                        return Ok(());
                    };
                    let range = self.mark..end;
                    if self.state == State::InItem {
                        let index = self.count;
                        self.count += 1;
                        self.state = State::AfterItem;
                        item(index, &buf[range])?;
                    } else {
                        self.push_head(&buf[range]);
                        self.state = State::AfterValue;
                    }
                    continue;
                }
                State::InKey => {
                    let mut key = ValueScan {
                        in_string: true,
                        escape: self.value.escape,
                        ..ValueScan::default()
                    };
                    let found = key.step(buf, &mut self.pos);
                    self.value.escape = key.escape;
                    let Some(end) = found else {
                        return Ok(());
                    };
                    let raw = &buf[self.mark..end];
                    let key: String =
                        serde_json::from_slice(raw).map_err(|source| ListWatchError::Decode {
                            what: "list",
                            source,
                        })?;
                    self.key_is_items = key == "items";
                    self.state = State::Colon;
                    continue;
                }
                _ => {}
            }
            let b = buf[self.pos];
            if is_ws(b) {
                self.pos += 1;
                continue;
            }
            match (self.state, b) {
                (State::Start, b'{') => self.state = State::KeyNext { first: true },
                (State::KeyNext { .. }, b'"') => {
                    self.mark = self.pos;
                    self.value = ValueScan::default();
                    self.state = State::InKey;
                }
                (State::KeyNext { first: true } | State::AfterValue, b'}') => {
                    self.state = State::End;
                }
                (State::Colon, b':') => self.state = State::ValueNext,
                (State::ValueNext, b'[') if self.key_is_items => {
                    self.items_open = true;
                    self.state = State::ItemNext { first: true };
                }
                (State::ItemNext { first: true } | State::AfterItem, b']') => {
                    self.state = State::AfterValue;
                }
                (State::ValueNext | State::ItemNext { .. }, b',' | b':' | b']' | b'}') => {
                    return Err(self.error(&format!("expected a value, found {:?}", char::from(b))));
                }
                (State::ValueNext, _) => {
                    // A member kept for the head: `mark` is still at its key. The
                    // value's scan starts at this byte.
                    self.value = ValueScan::start(b);
                    self.state = State::InValue;
                    continue;
                }
                (State::AfterValue, b',') => self.state = State::KeyNext { first: false },
                (State::ItemNext { .. }, _) => {
                    self.mark = self.pos;
                    self.value = ValueScan::start(b);
                    self.state = State::InItem;
                    continue;
                }
                (State::AfterItem, b',') => self.state = State::ItemNext { first: false },
                (State::End, _) => return Err(self.error("trailing bytes after the list")),
                (State::Start, _) => return Err(self.error("expected `{` to open the list")),
                (state, _) => {
                    return Err(
                        self.error(&format!("unexpected byte {:?} ({state:?})", char::from(b)))
                    );
                }
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// Appends a member of the list (key, colon, value) to the head.
    fn push_head(&mut self, member: &[u8]) {
        if self.head.len() > 1 {
            self.head.push(b',');
        }
        self.head.extend_from_slice(member);
    }
}

#[cfg(test)]
mod tests;
