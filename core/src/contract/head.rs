//! A snapshot head on the wire: which manifest is current for one board instance, its version
//! and period, and when it was published (`docs/snapshots.md`). The origin prints it with
//! [`Head::write`]; the edge worker and the browser package read it with [`Head::parse`].
//!
//! The reader takes a JSON object of exactly these fields, in any order and with any
//! whitespace, and nothing else: a small hand-written reader rather than a general JSON
//! library, which would add more to the browser package's WebAssembly than the rest of it.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::digest::{BoardDigest, ChunkHash};
use crate::json::{PeriodFields, parse_rfc3339, write_rfc3339, write_str, write_u64};

/// A board instance's latest publication, as its head answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The period kind (`all_time`, `daily`, `weekly`, `monthly`).
    pub period: String,
    /// The period instance's key.
    pub period_key: String,
    /// Its first instant (ms), `None` for all time.
    pub period_start_ms: Option<i64>,
    /// Its end, exclusive (ms), `None` for all time.
    pub period_end_ms: Option<i64>,
    /// The version the manifest holds.
    pub board_version: u64,
    /// The manifest's hash.
    pub manifest: ChunkHash,
    /// When it was published (ms, by the origin's clock).
    pub published_at_ms: i64,
    /// How often the origin republishes a changing instance.
    pub interval_ms: u64,
}

impl Head {
    /// The period fields every read of the instance answers with. O(1).
    pub fn period_fields(&self) -> PeriodFields<'_> {
        PeriodFields {
            kind: &self.period,
            key: &self.period_key,
            start_ms: self.period_start_ms,
            end_ms: self.period_end_ms,
        }
    }

    /// Appends the head: the period fields as reads print them, then `board_version`,
    /// `manifest`, `published_at` (RFC 3339) and `interval_ms`, in that order. O(length).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        self.period_fields().write(out);
        out.extend_from_slice(b"\"board_version\":");
        write_u64(out, self.board_version);
        out.extend_from_slice(b",\"manifest\":");
        write_str(out, &self.manifest.to_string());
        out.extend_from_slice(b",\"published_at\":\"");
        write_rfc3339(out, self.published_at_ms);
        out.extend_from_slice(b"\",\"interval_ms\":");
        write_u64(out, self.interval_ms);
        out.push(b'}');
    }

    /// Reads a head as [`Head::write`] prints it (any field order and whitespace); `None` when
    /// the bytes are not one: a missing, repeated or unknown field, a time or hash that does
    /// not parse, or anything after the object. O(length).
    pub fn parse(bytes: &[u8]) -> Option<Head> {
        let mut reader = Reader { bytes, at: 0 };
        let mut fields = Fields::default();
        reader.expect(b'{')?;
        if !reader.eat(b'}') {
            loop {
                let key = reader.string()?;
                reader.expect(b':')?;
                fields.read(&key, &mut reader)?;
                if reader.eat(b',') {
                    continue;
                }
                reader.expect(b'}')?;
                break;
            }
        }
        reader.skip_space();
        if reader.at != bytes.len() {
            return None;
        }
        let time = |t: Option<String>| match t {
            None => Some(None),
            Some(t) => parse_rfc3339(&t).map(Some),
        };
        Some(Head {
            period: fields.period?,
            period_key: fields.period_key?,
            period_start_ms: time(fields.period_start?)?,
            period_end_ms: time(fields.period_end?)?,
            board_version: fields.board_version?,
            manifest: BoardDigest::parse_hex(&fields.manifest?)?,
            published_at_ms: parse_rfc3339(&fields.published_at?)?,
            interval_ms: fields.interval_ms?,
        })
    }
}

/// The fields read so far; each may be read once (`Option<Option<_>>` for the nullable ones:
/// absent, or read as null or a time).
#[derive(Default)]
struct Fields {
    period: Option<String>,
    period_key: Option<String>,
    period_start: Option<Option<String>>,
    period_end: Option<Option<String>>,
    board_version: Option<u64>,
    manifest: Option<String>,
    published_at: Option<String>,
    interval_ms: Option<u64>,
}

impl Fields {
    /// Reads the value of `key` into its field; `None` for an unknown or repeated field.
    fn read(&mut self, key: &str, reader: &mut Reader<'_>) -> Option<()> {
        fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
            match slot.replace(value) {
                None => Some(()),
                Some(_) => None,
            }
        }
        match key {
            "period" => once(&mut self.period, reader.string()?),
            "period_key" => once(&mut self.period_key, reader.string()?),
            "period_start" => once(&mut self.period_start, reader.nullable_string()?),
            "period_end" => once(&mut self.period_end, reader.nullable_string()?),
            "board_version" => once(&mut self.board_version, reader.number()?),
            "manifest" => once(&mut self.manifest, reader.string()?),
            "published_at" => once(&mut self.published_at, reader.string()?),
            "interval_ms" => once(&mut self.interval_ms, reader.number()?),
            _ => None,
        }
    }
}

/// A cursor over the bytes of a JSON object of strings, nulls and whole numbers.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Takes `byte` after any space, if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// A whole number within 64 bits.
    fn number(&mut self) -> Option<u64> {
        self.skip_space();
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = core::str::from_utf8(&self.bytes[start..self.at]).ok()?;
        // JSON allows no leading zero but for 0 itself.
        if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        digits.parse().ok()
    }

    /// `null`, or a string.
    fn nullable_string(&mut self) -> Option<Option<String>> {
        self.skip_space();
        if self.bytes[self.at..].starts_with(b"null") {
            self.at += 4;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A string, its escapes undone.
    fn string(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let byte = *self.bytes.get(self.at)?;
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let escaped = *self.bytes.get(self.at)?;
                    self.at += 1;
                    let plain = match escaped {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let c = self.unicode_escape()?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                            continue;
                        }
                        _ => return None,
                    };
                    out.push(plain);
                }
                0x00..=0x1f => return None,
                _ => out.push(byte),
            }
        }
    }

    /// The character of a `\uXXXX` escape whose `\u` was read, a surrogate pair joined.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if (0xd800..0xdc00).contains(&first) {
            if self.bytes.get(self.at..self.at + 2) != Some(b"\\u") {
                return None;
            }
            self.at += 2;
            let second = self.hex4()?;
            if !(0xdc00..0xe000).contains(&second) {
                return None;
            }
            return char::from_u32(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00));
        }
        char::from_u32(first)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        self.at += 4;
        u32::from_str_radix(core::str::from_utf8(digits).ok()?, 16).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daily() -> Head {
        Head {
            period: "daily".into(),
            period_key: "2026-10-13".into(),
            period_start_ms: Some(1_791_849_600_000),
            period_end_ms: Some(1_791_936_000_000),
            board_version: 7,
            manifest: BoardDigest([0xab; 32]),
            published_at_ms: 1_791_885_900_500,
            interval_ms: 1000,
        }
    }

    /// A head prints its fields in the contract's order and reads back to itself; all time
    /// prints its nulls.
    #[test]
    fn a_head_prints_in_order_and_reads_back() {
        let head = daily();
        let mut out = Vec::new();
        head.write(&mut out);
        let hash = "ab".repeat(32);
        assert_eq!(
            core::str::from_utf8(&out).unwrap(),
            alloc::format!(
                r#"{{"period":"daily","period_key":"2026-10-13","period_start":"2026-10-13T00:00:00Z","period_end":"2026-10-14T00:00:00Z","board_version":7,"manifest":"{hash}","published_at":"2026-10-13T10:05:00.5Z","interval_ms":1000}}"#
            )
        );
        assert_eq!(Head::parse(&out), Some(head));
        let all_time = Head {
            period: "all_time".into(),
            period_key: "all_time".into(),
            period_start_ms: None,
            period_end_ms: None,
            ..daily()
        };
        let mut out = Vec::new();
        all_time.write(&mut out);
        assert!(out.starts_with(
            br#"{"period":"all_time","period_key":"all_time","period_start":null,"period_end":null,"#
        ));
        assert_eq!(Head::parse(&out), Some(all_time));
    }

    /// Field order and whitespace are free and escapes are read; anything missing, repeated,
    /// unknown, malformed or trailing is not a head.
    #[test]
    fn only_a_head_reads_as_one() {
        let hash = "ab".repeat(32);
        let shuffled = alloc::format!(
            " {{ \"interval_ms\" : 1000 , \"manifest\":\"{hash}\",\"board_version\":7,\"published_at\":\"2026-10-13T10:05:00.5Z\",\"period_end\":\"2026-10-14T00:00:00Z\",\"period_start\":\"2026-10-13T00:00:00Z\",\"period_key\":\"2026\\u002d10-13\",\"period\":\"daily\"}} "
        );
        assert_eq!(Head::parse(shuffled.as_bytes()), Some(daily()));
        let mut good = Vec::new();
        daily().write(&mut good);
        let text = String::from_utf8(good).unwrap();
        for bad in [
            text.replace(",\"interval_ms\":1000", ""),
            text.replace("}", ",\"interval_ms\":1000}"),
            text.replace("}", ",\"extra\":1}"),
            text.replace(&hash, "AB"),
            text.replace("\"board_version\":7", "\"board_version\":-7"),
            text.replace("\"board_version\":7", "\"board_version\":07"),
            text.replace("2026-10-13T10:05:00.5Z", "yesterday"),
            alloc::format!("{text}x"),
            String::from("{"),
            String::new(),
        ] {
            assert_eq!(Head::parse(bad.as_bytes()), None, "{bad}");
        }
    }
}
