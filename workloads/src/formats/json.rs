//! Jepsen histories in JSON, as the Elle and Knossos command-line wrappers take them: one op object per line, or a
//! top-level array of op objects (`[{"type":"invoke","f":"read","process":0,"time":11142323154,"index":0}, ...]`),
//! with Jepsen's field names and keyword values as strings.
//!
//! Each op is parsed with serde_json on its own, from where it starts, so an op that is not JSON, or a JSON value that
//! is not an op object, is reported at its own line and column (serde_json alone, on a whole array, would only say
//! where the array broke).

use super::jepsen::{OpError, RawOp};
use serde_json::Value;

/// Line and column (1-based) of byte offsets in a text.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Lines { starts }
    }

    fn at(&self, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&start| start <= offset);
        (line, offset - self.starts[line - 1] + 1)
    }
}

/// Reads every op object of a Jepsen JSON history.
pub(crate) fn read_json_ops(text: &str) -> Result<Vec<RawOp>, OpError> {
    let lines = Lines::new(text);
    let mut reader = Reader {
        text,
        lines: &lines,
        pos: 0,
    };
    reader.skip_blank();
    let mut ops = Vec::new();
    if reader.peek() == Some(b'[') {
        reader.pos += 1;
        reader.array_items(&mut ops)?;
        reader.skip_blank();
        if reader.pos < text.len() {
            return Err(reader.error_here("text after the history's closing ']'"));
        }
        return Ok(ops);
    }
    while reader.pos < text.len() {
        ops.push(reader.op()?);
        reader.skip_blank();
        // Some writers separate line-per-op objects with commas too.
        if reader.peek() == Some(b',') {
            reader.pos += 1;
            reader.skip_blank();
        }
    }
    Ok(ops)
}

struct Reader<'a> {
    text: &'a str,
    lines: &'a Lines,
    pos: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_blank(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn error_here(&self, message: impl Into<String>) -> OpError {
        let (line, column) = self.lines.at(self.pos);
        OpError {
            line,
            column,
            message: message.into(),
        }
    }

    /// The items of an array whose `[` was just read, up to and including its `]`.
    fn array_items(&mut self, ops: &mut Vec<RawOp>) -> Result<(), OpError> {
        loop {
            self.skip_blank();
            match self.peek() {
                None => return Err(self.error_here("missing ']' at the end of the history")),
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(_) => ops.push(self.op()?),
            }
            self.skip_blank();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                None => return Err(self.error_here("missing ']' at the end of the history")),
                Some(other) => {
                    return Err(self.error_here(format!("expected ',' or ']' after an op, found '{}'", other as char)))
                }
            }
        }
    }

    /// One JSON value at the current position, which must be an op object.
    fn op(&mut self) -> Result<RawOp, OpError> {
        let (line, column) = self.lines.at(self.pos);
        let mut stream = serde_json::Deserializer::from_str(&self.text[self.pos..]).into_iter::<Value>();
        let Some(parsed) = stream.next() else {
            return Err(self.error_here("unexpected end of the history"));
        };
        let value = parsed.map_err(|e| {
            // serde_json counts from the slice's start: its first line begins at our column.
            let (e_line, e_column) = (e.line().max(1), e.column().max(1));
            let column = if e_line == 1 { column + e_column - 1 } else { e_column };
            OpError {
                line: line + e_line - 1,
                column,
                message: format!("not JSON: {}", strip_position(&e.to_string())),
            }
        })?;
        self.pos += stream.byte_offset();
        match value {
            Value::Object(map) => Ok(RawOp { map, line, column }),
            other => Err(OpError {
                line,
                column,
                message: format!("expected an op object, found {}", shorten(&other.to_string())),
            }),
        }
    }
}

/// serde_json's message without its own ` at line L column C`, which counts from the op, not the file.
fn strip_position(message: &str) -> &str {
    message.split(" at line ").next().unwrap_or(message)
}

fn shorten(text: &str) -> String {
    const SHOWN_MAX: usize = 60;
    if text.chars().count() <= SHOWN_MAX {
        return text.to_string();
    }
    let head: String = text.chars().take(SHOWN_MAX).collect();
    format!("{head}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(ops: &[RawOp]) -> Vec<(usize, usize)> {
        ops.iter().map(|op| (op.line, op.column)).collect()
    }

    #[test]
    fn given_an_array_of_ops_when_read_should_give_each_op_its_own_line_and_column() {
        let text = "[{\"type\":\"invoke\",\"f\":\"read\",\"process\":0},\n {\"type\":\"ok\",\"f\":\"read\",\"process\":0,\"value\":{\"0\":1}}]\n";
        let ops = read_json_ops(text).unwrap();
        assert_eq!(positions(&ops), vec![(1, 2), (2, 2)]);
        assert_eq!(ops[1].map["value"]["0"], 1);
    }

    #[test]
    fn given_one_op_per_line_when_read_should_read_them_all() {
        let ops = read_json_ops("{\"type\":\"invoke\"}\n\n{\"type\":\"ok\"}\n").unwrap();
        assert_eq!(positions(&ops), vec![(1, 1), (3, 1)]);
    }

    #[test]
    fn given_a_broken_op_on_line_three_when_read_should_name_line_and_column() {
        let text = "[{\"type\":\"invoke\"},\n{\"type\":\"ok\"},\n  {\"type\" \"ok\"}]";
        let err = read_json_ops(text).unwrap_err();
        assert_eq!((err.line, err.column), (3, 11), "{}", err.message);
        assert!(err.message.starts_with("not JSON: expected `:`"), "{}", err.message);
    }

    #[test]
    fn given_a_value_that_is_not_an_op_when_read_should_say_so_where_it_is() {
        let err = read_json_ops("[{\"type\":\"ok\"}, 7]").unwrap_err();
        assert_eq!((err.line, err.column), (1, 17));
        assert!(
            err.message.contains("expected an op object, found 7"),
            "{}",
            err.message
        );
        let err = read_json_ops("[{\"type\":\"ok\"}").unwrap_err();
        assert!(err.message.contains("missing ']'"), "{}", err.message);
    }
}
