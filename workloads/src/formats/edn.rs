//! A small reader for the subset of EDN that Jepsen histories use, producing JSON values.
//!
//! Keywords and symbols become strings without the colon (`:write` -> `"write"`), vectors, lists and sets become
//! arrays, maps become objects with stringified keys, tagged literals (`#jepsen.history.Op{...}`, `#inst "..."`) become
//! the tagged value, `#_` discards the next form, and `;` starts a comment. Positions are tracked so that errors name
//! the line and column.

use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// A syntax error at a 1-based line and column of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdnError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was wrong.
    pub message: String,
}

/// Reads EDN forms one after another from a text.
///
/// Hand-written rather than a crate: the EDN crates (edn-format, clojure-reader, edn-rs) parse into trees of their
/// own, which would then be rebuilt as JSON values, every op map and its keys included; reading in place lets the
/// Jepsen reader take an op map's fields straight from the text ([`EdnReader::map_entries`], [`Form::Name`]), which
/// is most of what makes a large history quick to load.
pub struct EdnReader<'a> {
    src: &'a str,
    text: &'a [u8],
    pos: usize,
    line: usize,
    line_start: usize,
    /// The items of the sequences being read, innermost last, so that each becomes a list of its exact length.
    pending: Vec<Value>,
}

/// A form read in place: a keyword's or symbol's name borrowed from the text (`:invoke` is `invoke`), any other
/// form as the value [`EdnReader::next_value`] gives it. A name stands for the JSON string it would be.
#[derive(Debug)]
pub(crate) enum Form<'a> {
    /// A keyword without its colon, or a symbol.
    Name(&'a str),
    /// Any other form.
    Value(Value),
}

const MAX_DEPTH: usize = 64;

/// Bytes that end a token: ASCII whitespace, `,`, brackets and braces, `"` and `;`.
const DELIMITER: [bool; 256] = byte_class(b",()[]{}\";");
/// Bytes skipped between forms: ASCII whitespace and `,`.
const BLANK: [bool; 256] = byte_class(b",");

/// A table of the ASCII whitespace bytes and `extra`.
const fn byte_class(extra: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_whitespace();
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        table[extra[i] as usize] = true;
        i += 1;
    }
    table
}

/// Whether a token that starts a form reads as a number (`-3`, `+1.5`, `12N`), not a name.
fn starts_numeric(token: &str) -> bool {
    token
        .bytes()
        .find(|b| !matches!(b, b'-' | b'+'))
        .is_some_and(|b| b.is_ascii_digit())
}

/// The value of an atom token that started at `line`, `column`.
fn atom_value(token: Cow<'_, str>, line: usize, column: usize) -> Result<Value, EdnError> {
    if token.as_bytes().first() == Some(&b':') {
        return Ok(Value::String(token[1..].to_string()));
    }
    if !starts_numeric(&token) {
        return Ok(match token.as_ref() {
            "nil" => Value::Null,
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(token.into_owned()),
        });
    }
    // Without the `N` (big integer) or `M` (big decimal) suffix.
    let digits = &token[..token
        .bytes()
        .rposition(|b| !matches!(b, b'N' | b'M'))
        .map_or(0, |i| i + 1)];
    if let Ok(n) = digits.parse::<i64>() {
        return Ok(Value::Number(n.into()));
    }
    if let Some(n) = digits.parse::<f64>().ok().and_then(Number::from_f64) {
        return Ok(Value::Number(n));
    }
    if token.contains('/') {
        // A ratio such as 1/3: keep its text.
        return Ok(Value::String(token.into_owned()));
    }
    Err(EdnError {
        line,
        column,
        message: format!("malformed number {token:?}"),
    })
}

impl<'a> EdnReader<'a> {
    /// A reader at the start of `text`; `first_line` is the 1-based line number `text` starts on.
    pub fn new(text: &'a str, first_line: usize) -> Self {
        EdnReader {
            src: text,
            text: text.as_bytes(),
            pos: 0,
            line: first_line,
            line_start: 0,
            pending: Vec::new(),
        }
    }

    /// Line and column of the next unread byte.
    pub fn position(&self) -> (usize, usize) {
        (self.line, self.pos - self.line_start + 1)
    }

    fn error(&self, message: impl Into<String>) -> EdnError {
        let (line, column) = self.position();
        EdnError {
            line,
            column,
            message: message.into(),
        }
    }

    /// The next unread byte.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        if b == b'\n' {
            self.line += 1;
            self.line_start = self.pos;
        }
        Some(b)
    }

    /// Skips whitespace, commas and `;` comments.
    pub(crate) fn skip_blank(&mut self) {
        while let Some(&b) = self.text.get(self.pos) {
            if b == b'\n' {
                self.pos += 1;
                self.line += 1;
                self.line_start = self.pos;
            } else if BLANK[b as usize] {
                self.pos += 1;
            } else if b == b';' {
                // Up to the newline, which the next round counts.
                while self.text.get(self.pos).is_some_and(|&b| b != b'\n') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// The next form, or `None` at the end of the text.
    pub fn next_value(&mut self) -> Result<Option<Value>, EdnError> {
        self.skip_blank();
        if self.peek().is_none() {
            return Ok(None);
        }
        self.value(0).map(Some)
    }

    /// The form at the next non-blank byte, nested `depth` deep.
    pub(crate) fn value(&mut self, depth: usize) -> Result<Value, EdnError> {
        if depth > MAX_DEPTH {
            return Err(self.error("forms nested too deeply"));
        }
        self.skip_blank();
        match self.peek() {
            None => Err(self.error("unexpected end of input")),
            Some(b'"') => self.string(),
            Some(b'[') => self.sequence(b']', depth),
            Some(b'(') => self.sequence(b')', depth),
            Some(b'{') => self.map(depth),
            Some(b'#') => self.dispatch(depth),
            Some(b'\\') => {
                self.bump();
                let token = self.token();
                Ok(Value::String(match token.as_ref() {
                    "newline" => "\n".to_string(),
                    "space" => " ".to_string(),
                    "tab" => "\t".to_string(),
                    other => other.to_string(),
                }))
            }
            Some(b) if matches!(b, b')' | b']' | b'}') => Err(self.error(format!("unexpected '{}'", b as char))),
            Some(_) => self.atom(),
        }
    }

    /// The form at the next non-blank byte as [`Self::value`] reads it (the same errors at the same places), a
    /// keyword or symbol borrowed as its name.
    pub(crate) fn form(&mut self, depth: usize) -> Result<Form<'a>, EdnError> {
        if depth > MAX_DEPTH {
            return Err(self.error("forms nested too deeply"));
        }
        self.skip_blank();
        match self.peek() {
            Some(b) if !DELIMITER[b as usize] && b != b'#' && b != b'\\' => {
                let (line, column) = self.position();
                let token = self.token();
                if let Cow::Borrowed(token) = token {
                    if b == b':' {
                        return Ok(Form::Name(&token[1..]));
                    }
                    if !(starts_numeric(token) || matches!(token, "nil" | "true" | "false")) {
                        return Ok(Form::Name(token));
                    }
                }
                atom_value(token, line, column).map(Form::Value)
            }
            _ => self.value(depth).map(Form::Value),
        }
    }

    /// The bytes up to the next delimiter (never a newline), as text.
    fn token(&mut self) -> Cow<'a, str> {
        let start = self.pos;
        while self.text.get(self.pos).is_some_and(|&b| !DELIMITER[b as usize]) {
            self.pos += 1;
        }
        // Tokens start and end next to ASCII bytes, so they are whole characters of the text.
        match self.src.get(start..self.pos) {
            Some(token) => Cow::Borrowed(token),
            None => String::from_utf8_lossy(&self.text[start..self.pos]),
        }
    }

    fn atom(&mut self) -> Result<Value, EdnError> {
        let (line, column) = self.position();
        let token = self.token();
        atom_value(token, line, column)
    }

    fn string(&mut self) -> Result<Value, EdnError> {
        self.bump();
        let mut out = Vec::new();
        loop {
            let run = self.pos;
            while self
                .text
                .get(self.pos)
                .is_some_and(|&b| !matches!(b, b'"' | b'\\' | b'\n'))
            {
                self.pos += 1;
            }
            out.extend_from_slice(&self.text[run..self.pos]);
            match self.bump() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => break,
                Some(b'\\') => match self.bump() {
                    Some(b'n') => out.push(b'\n'),
                    Some(b't') => out.push(b'\t'),
                    Some(b'r') => out.push(b'\r'),
                    Some(b'u') => {
                        let start = self.pos;
                        for _ in 0..4 {
                            self.bump();
                        }
                        let hex = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
                        let c = u32::from_str_radix(hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| self.error(format!("bad \\u escape {hex:?}")))?;
                        out.extend_from_slice(c.to_string().as_bytes());
                    }
                    Some(other) => out.push(other),
                    None => return Err(self.error("unterminated string")),
                },
                Some(b) => out.push(b),
            }
        }
        Ok(Value::String(String::from_utf8(out).unwrap_or_else(|e| {
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        })))
    }

    /// Reads the forms of a sequence whose opening byte is next, up to and including `close`: each is handed, with
    /// its depth, to `item`, which must read it; a `#_` form is discarded.
    pub(crate) fn items<E: From<EdnError>>(
        &mut self,
        close: u8,
        depth: usize,
        mut item: impl FnMut(&mut Self, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        self.bump();
        loop {
            self.skip_blank();
            match self.peek() {
                None => return Err(self.error(format!("missing '{}'", close as char)).into()),
                Some(b) if b == close => {
                    self.bump();
                    return Ok(());
                }
                Some(b'#') if self.text.get(self.pos + 1) == Some(&b'_') => {
                    self.bump();
                    self.bump();
                    self.value(depth + 1)?;
                }
                Some(_) => item(self, depth + 1)?,
            }
        }
    }

    fn sequence(&mut self, close: u8, depth: usize) -> Result<Value, EdnError> {
        let first = self.pending.len();
        let read = self.items(close, depth, |r, depth| {
            let item = r.value(depth)?;
            r.pending.push(item);
            Ok::<_, EdnError>(())
        });
        let items: Vec<Value> = self.pending.drain(first..).collect();
        read.map(|()| Value::Array(items))
    }

    fn map(&mut self, depth: usize) -> Result<Value, EdnError> {
        let Value::Array(items) = self.sequence(b'}', depth)? else {
            unreachable!("sequence returns an array");
        };
        if items.len() % 2 != 0 {
            return Err(self.error("a map needs an even number of forms"));
        }
        let mut map = Map::new();
        let mut items = items.into_iter();
        while let (Some(k), Some(v)) = (items.next(), items.next()) {
            let key = match k {
                Value::String(s) => s,
                other => other.to_string(),
            };
            map.insert(key, v);
        }
        Ok(Value::Object(map))
    }

    /// Reads the map whose `{` is next, nested `depth` deep, without building it: each key is read in place and
    /// handed, with its value's depth, to `entry`, which must read the value. The same forms are read as
    /// [`Self::value`] reads for the map, with the same errors at the same places.
    pub(crate) fn map_entries<E: From<EdnError>>(
        &mut self,
        depth: usize,
        mut entry: impl FnMut(&mut Self, Form<'a>, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        if depth > MAX_DEPTH {
            return Err(self.error("forms nested too deeply").into());
        }
        let mut key = None;
        self.items(b'}', depth, |r, depth| {
            match key.take() {
                None => key = Some(r.form(depth)?),
                Some(k) => entry(r, k, depth)?,
            }
            Ok::<_, E>(())
        })?;
        if key.is_some() {
            return Err(self.error("a map needs an even number of forms").into());
        }
        Ok(())
    }

    /// Reads the tag of a tagged literal (`#jepsen.history.Op{...}`) when one is next, leaving its form to be read
    /// one level deeper, as [`Self::value`] reads it; reads nothing and says false for anything else (`#{`, `#_`).
    pub(crate) fn skip_tag(&mut self) -> bool {
        if self.peek() != Some(b'#') || matches!(self.text.get(self.pos + 1), Some(b'{' | b'_')) {
            return false;
        }
        self.bump();
        self.token();
        true
    }

    fn dispatch(&mut self, depth: usize) -> Result<Value, EdnError> {
        self.bump();
        match self.peek() {
            Some(b'{') => self.sequence(b'}', depth),
            Some(b'_') => {
                self.bump();
                self.value(depth + 1)?;
                self.value(depth)
            }
            _ => {
                // A tagged literal: drop the tag, keep the value.
                self.token();
                self.value(depth + 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_all(text: &str) -> Result<Vec<Value>, EdnError> {
        let mut r = EdnReader::new(text, 1);
        let mut out = Vec::new();
        while let Some(v) = r.next_value()? {
            out.push(v);
        }
        Ok(out)
    }

    #[test]
    fn given_jepsen_op_map_when_read_should_give_json_object() {
        let v = read_all(r#"{:process 0, :type :invoke, :f :cas, :value [1 2], :time 12N} ; note"#).unwrap();
        assert_eq!(
            v,
            vec![json!({"process": 0, "type": "invoke", "f": "cas", "value": [1, 2], "time": 12})]
        );
    }

    #[test]
    fn given_tagged_record_and_set_when_read_should_keep_values() {
        let v = read_all(r#"#jepsen.history.Op{:f :read, :value #{1 2}} #_ :gone "a\"b" nil"#).unwrap();
        assert_eq!(
            v,
            vec![json!({"f": "read", "value": [1, 2]}), json!("a\"b"), Value::Null]
        );
    }

    #[test]
    fn given_unclosed_vector_on_line_two_when_read_should_name_line_and_column() {
        let err = read_all("{:f :read}\n{:value [1 2").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.column > 1, "{err:?}");
    }
}
