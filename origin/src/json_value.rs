//! Reading a request body (or a line of `standings import`) into a `serde_json::Value` that refuses
//! a repeated member name in any object, at any depth.
//!
//! `serde_json`'s own `Value` keeps the last of two equal keys, so a proxy that checked the
//! first value would see the second one applied. This reader builds the same `Value` in the
//! same single pass, and stops at the first key an object already holds (keys compare after
//! unescaping, so `"a"` and `"\u0061"` are one key). The typed reads (`#[derive(Deserialize)]`
//! structs without `flatten` or map fields) already refuse a repeated field, so a body either
//! reads typed or comes through here; nothing reads JSON a third way. Depth is bounded by
//! `serde_json`'s recursion limit (128 levels), which it checks before calling the visitor.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

/// Why a body is not a JSON value this service reads.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Not JSON at all (syntax, trailing text, nesting past the recursion limit).
    NotJson(serde_json::Error),
    /// An object names `key` twice; `path` is where that object sits (`$` is the body).
    RepeatedKey {
        /// The repeated member name, unescaped.
        key: String,
        /// The object's place in the body, as `$.events[3]`.
        path: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotJson(e) => write!(f, "the body is not JSON: {e}"),
            ReadError::RepeatedKey { key, path } => write!(
                f,
                "the body repeats the key {key:?} in the object at {path}; each key may appear once"
            ),
        }
    }
}

/// Reads `bytes` as one JSON value, refusing a repeated key anywhere in it. O(length), one
/// pass, the same allocations as `serde_json::from_slice::<Value>`.
pub(crate) fn read_value(bytes: &[u8]) -> Result<Value, ReadError> {
    let repeated = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let read = ValueSeed {
        at: &At::Root,
        repeated: &repeated,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    match (read, repeated.into_inner()) {
        (_, Some(repeated)) => Err(repeated),
        (Ok(value), None) => Ok(value),
        (Err(e), None) => Err(ReadError::NotJson(e)),
    }
}

/// Where a value sits, as a list from the value up to the body; formatted only for an error.
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn write(&self, out: &mut String) {
        match self {
            At::Root => out.push('$'),
            At::Key(parent, key) => {
                parent.write(out);
                if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    let _ = write!(out, ".{key}");
                } else {
                    let _ = write!(out, "[{key:?}]");
                }
            }
            At::Index(parent, i) => {
                parent.write(out);
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

/// Reads one value at `at`; a repeated key is recorded in `repeated` (the error serde passes
/// up carries only text).
struct ValueSeed<'a> {
    at: &'a At<'a>,
    repeated: &'a RefCell<Option<ReadError>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text has no NaN or infinity, so this is never Null for a parsed number.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let at = At::Index(self.at, items.len());
            let seed = ValueSeed {
                at: &at,
                repeated: self.repeated,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match object.entry(key) {
                Entry::Occupied(repeated) => {
                    let mut path = String::new();
                    self.at.write(&mut path);
                    let key = repeated.key().clone();
                    let message = format!("repeated key {key:?}");
                    *self.repeated.borrow_mut() = Some(ReadError::RepeatedKey { key, path });
                    return Err(de::Error::custom(message));
                }
                Entry::Vacant(vacant) => {
                    let at = At::Key(self.at, vacant.key());
                    let value = map.next_value_seed(ValueSeed {
                        at: &at,
                        repeated: self.repeated,
                    })?;
                    vacant.insert(value);
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn repeated(text: &str) -> (String, String) {
        match read_value(text.as_bytes()) {
            Err(ReadError::RepeatedKey { key, path }) => (key, path),
            other => panic!("{text}: expected a repeated key, got {other:?}"),
        }
    }

    /// Without a repeated key the value is what `serde_json` reads, numbers and escapes and all.
    #[test]
    fn reads_what_serde_json_reads() {
        for text in [
            r#"{"a": 1, "b": [1, -2, 3.5, 18446744073709551615, "x\u00e9\n", null, true, {}], "c": {"d": []}}"#,
            "[]",
            "  \"text\"  ",
            "-9223372036854775808",
            "1e400",
            r#"[{"a": 1}, {"a": 2}]"#,
        ] {
            let expected: Result<Value, _> = serde_json::from_str(text);
            match (read_value(text.as_bytes()), expected) {
                (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs, "{text}"),
                (Err(ReadError::NotJson(_)), Err(_)) => {}
                (ours, theirs) => panic!("{text}: {ours:?} against {theirs:?}"),
            }
        }
    }

    /// A repeated key is refused at the top, in nested objects and in objects inside arrays,
    /// with the key and where its object is.
    #[test]
    fn a_repeated_key_is_named_with_its_place() {
        assert_eq!(
            repeated(r#"{"value": 1, "value": 1000000000000}"#),
            ("value".into(), "$".into())
        );
        assert_eq!(
            repeated(r#"{"events": [], "events": [{"event_id": "e"}]}"#),
            ("events".into(), "$".into())
        );
        assert_eq!(
            repeated(r#"{"events": [{"a": 1}, {"b": {"c": 1, "c": 2}}]}"#),
            ("c".into(), "$.events[1].b".into())
        );
        assert_eq!(
            repeated(r#"[[1], [{"x y": {"k": 1, "k": 1}}]]"#),
            ("k".into(), r#"$[1][0]["x y"]"#.into())
        );
    }

    /// Keys compare after unescaping: `"a"` and `"\u0061"` are the same key.
    #[test]
    fn escaped_keys_are_the_same_key() {
        assert_eq!(repeated(r#"{"a": 1, "\u0061": 2}"#), ("a".into(), "$".into()));
        assert_eq!(repeated(r#"{"\n": 1, "\u000a": 2}"#), ("\n".into(), "$".into()));
        // Equal values do not make a repeat acceptable.
        assert_eq!(repeated(r#"{"a": 1, "a": 1}"#), ("a".into(), "$".into()));
        // Different keys with the same prefix are not a repeat.
        assert_eq!(
            read_value(br#"{"a": 1, "ab": 2, "A": 3}"#).unwrap(),
            json!({"a": 1, "ab": 2, "A": 3})
        );
    }

    /// The same key in sibling objects, or at different depths, is no repeat.
    #[test]
    fn one_key_per_object() {
        let text = r#"{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}"#;
        assert_eq!(
            read_value(text.as_bytes()).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    /// Deep nesting stops at `serde_json`'s recursion limit with an error, not a stack overflow.
    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        for open in ["[", "{\"a\":"] {
            let text = open.repeat(100_000);
            assert!(matches!(read_value(text.as_bytes()), Err(ReadError::NotJson(_))));
        }
        let within = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(read_value(within.as_bytes()).is_ok());
    }

    /// A repeat found before the text goes wrong is reported as the repeat; broken text before
    /// any repeat is not JSON.
    #[test]
    fn the_first_fault_is_reported() {
        assert_eq!(repeated(r#"{"a": 1, "a": 2, "#), ("a".into(), "$".into()));
        assert!(matches!(
            read_value(br#"{"a": 1, "b" 2, "a": 3}"#),
            Err(ReadError::NotJson(_))
        ));
        assert!(matches!(read_value(b"{} {}"), Err(ReadError::NotJson(_))));
    }
}
