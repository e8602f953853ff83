//! A small reader for the subset of EDN that Jepsen histories use, producing JSON values.
//!
//! Keywords and symbols become strings without the colon (`:write` -> `"write"`), vectors, lists and sets become
//! arrays, maps become objects with stringified keys, tagged literals (`#jepsen.history.Op{...}`, `#inst "..."`) become
//! the tagged value, `#_` discards the next form, and `;` starts a comment. Positions are tracked so that errors name
//! the line and column.

use serde_json::{Map, Number, Value};

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
pub struct EdnReader<'a> {
    text: &'a [u8],
    pos: usize,
    line: usize,
    line_start: usize,
}

const MAX_DEPTH: usize = 64;

fn is_delimiter(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';')
}

impl<'a> EdnReader<'a> {
    /// A reader at the start of `text`; `first_line` is the 1-based line number `text` starts on.
    pub fn new(text: &'a str, first_line: usize) -> Self {
        EdnReader {
            text: text.as_bytes(),
            pos: 0,
            line: first_line,
            line_start: 0,
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

    fn peek(&self) -> Option<u8> {
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

    fn skip_blank(&mut self) {
        while let Some(b) = self.peek() {
            if b.is_ascii_whitespace() || b == b',' {
                self.bump();
            } else if b == b';' {
                while self.peek().is_some_and(|b| b != b'\n') {
                    self.bump();
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

    fn value(&mut self, depth: usize) -> Result<Value, EdnError> {
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
                Ok(Value::String(match token.as_str() {
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

    fn token(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(|b| !is_delimiter(b)) {
            self.bump();
        }
        String::from_utf8_lossy(&self.text[start..self.pos]).into_owned()
    }

    fn atom(&mut self) -> Result<Value, EdnError> {
        let (line, column) = self.position();
        let token = self.token();
        if let Some(keyword) = token.strip_prefix(':') {
            return Ok(Value::String(keyword.to_string()));
        }
        match token.as_str() {
            "nil" => return Ok(Value::Null),
            "true" => return Ok(Value::Bool(true)),
            "false" => return Ok(Value::Bool(false)),
            _ => {}
        }
        let starts_numeric = token
            .trim_start_matches(['-', '+'])
            .starts_with(|c: char| c.is_ascii_digit());
        if !starts_numeric {
            return Ok(Value::String(token));
        }
        let digits = token.trim_end_matches(['N', 'M']);
        if let Ok(n) = digits.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        if let Some(n) = digits.parse::<f64>().ok().and_then(Number::from_f64) {
            return Ok(Value::Number(n));
        }
        if token.contains('/') {
            // A ratio such as 1/3: keep its text.
            return Ok(Value::String(token));
        }
        Err(EdnError {
            line,
            column,
            message: format!("malformed number {token:?}"),
        })
    }

    fn string(&mut self) -> Result<Value, EdnError> {
        self.bump();
        let mut out = Vec::new();
        loop {
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
        Ok(Value::String(String::from_utf8_lossy(&out).into_owned()))
    }

    fn sequence(&mut self, close: u8, depth: usize) -> Result<Value, EdnError> {
        self.bump();
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            match self.peek() {
                None => return Err(self.error(format!("missing '{}'", close as char))),
                Some(b) if b == close => {
                    self.bump();
                    return Ok(Value::Array(items));
                }
                Some(b'#') if self.text.get(self.pos + 1) == Some(&b'_') => {
                    self.bump();
                    self.bump();
                    self.value(depth + 1)?;
                }
                Some(_) => items.push(self.value(depth + 1)?),
            }
        }
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
