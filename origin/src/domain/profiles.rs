//! The rules for what a player may write into their profile (`PUT
//! /v1/games/{game}/players/{player_id}/profile`) and into a score event's `metadata`, as pure
//! parsers: a `DisplayName` or a `Country` exists only once its text passed every rule, so the
//! store and the boards never meet an unchecked one.
//!
//! A display name is taken in Unicode Normalization Form C and every rule is checked on that form,
//! so two names that look the same and differ only in how their accents were encoded are one name,
//! stored once. Its length is counted in extended grapheme clusters (what a reader sees as one
//! character: "é", "🇩🇪", "👩‍💻") and also bounded in UTF-8 bytes, because a single cluster can be
//! arbitrarily long. The checks run in this order and the first that fails is reported: empty,
//! a forbidden character or too many marks on one cluster (cluster by cluster), surrounding
//! whitespace, nothing visible, too many clusters, too many bytes.
//!
//! Invisible and unassigned characters are refused because they make two names that read alike
//! compare unequal (impersonation) or render unpredictably. The one exception is a format
//! character that only joins inside a cluster: U+200D ZERO WIDTH JOINER strictly inside a
//! cluster (emoji ZWJ sequences, Indic conjuncts) and the tag characters of the subdivision flags
//! (🏴 followed by tags); a joiner at either end of its cluster joins nothing and is refused.
//!
//! Two rules keep a name drawable in a row of a table: a cluster carries at most
//! [`MAX_MARKS_PER_GRAPHEME`] combining marks (a letter with 60 accents draws over the rows above
//! it), and a name must show something: characters that draw nothing though they are letters or
//! symbols by category (the Hangul fillers, the blank Braille pattern) are refused anywhere, and a
//! name of only marks and spaces is refused as invisible. The rules apply when a name is set;
//! names already in the log replay as they were.
//!
//! Each refusal is its own `ProfileError` variant with a stable `code` and the field it concerns,
//! so `http/` only translates; the domain knows no HTTP.

use std::fmt;

use standings_core::contract::Code;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
use unicode_segmentation::UnicodeSegmentation;

/// The most extended grapheme clusters a display name may have.
pub const MAX_DISPLAY_NAME_GRAPHEMES: usize = 32;

/// The most combining marks (`Mn`, `Me`) one grapheme cluster of a display name may carry: enough
/// for Vietnamese or pointed Hebrew, too few to draw outside its row.
pub const MAX_MARKS_PER_GRAPHEME: usize = 4;

/// The most UTF-8 bytes a display name may have, counted in its NFC form, and the largest
/// metadata cap a board may set: the core's limits, which its decoders hold parts to.
pub use standings_core::profile::{MAX_DISPLAY_NAME_BYTES, MAX_METADATA_BYTES};

/// A board's `metadata_max_bytes` when its definition gives none: the largest.
pub fn default_metadata_cap() -> i64 {
    MAX_METADATA_BYTES as i64
}

/// Checks a board's `metadata_max_bytes`: 0 (no metadata) to [`MAX_METADATA_BYTES`]. O(1).
pub fn check_metadata_cap(cap: i64) -> Result<(), String> {
    if (0..=default_metadata_cap()).contains(&cap) {
        return Ok(());
    }
    Err(format!(
        "metadata_max_bytes {cap} must be from 0 (no metadata) to {MAX_METADATA_BYTES}"
    ))
}

/// A player's display name that passed every rule, held in NFC.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DisplayName(Box<str>);

impl DisplayName {
    /// Normalizes `input` to NFC and checks it against the display-name rules (see the module
    /// doc), returning the NFC form. O(len): one normalization pass and one pass over the result.
    pub fn parse(input: &str) -> Result<DisplayName, ProfileError> {
        if input.is_empty() {
            return Err(ProfileError::DisplayNameEmpty);
        }
        let name: String = input.nfc().collect();
        let mut graphemes = 0;
        let mut char_index = 0;
        let mut visible = false;
        for (cluster_start, cluster) in name.grapheme_indices(true) {
            graphemes += 1;
            let last = cluster.chars().count() - 1;
            let marks = cluster.chars().filter(|c| is_mark(*c)).count();
            if marks > MAX_MARKS_PER_GRAPHEME {
                return Err(ProfileError::DisplayNameTooManyMarks {
                    grapheme_index: graphemes - 1,
                    marks,
                });
            }
            visible |= cluster.chars().any(|c| !is_mark(c) && !c.is_whitespace());
            for (position, (offset, c)) in cluster.char_indices().enumerate() {
                if let Some(category) = ForbiddenCategory::of(c)
                    && !joins_inside(c, cluster, position, last)
                {
                    return Err(ProfileError::DisplayNameForbiddenCharacter {
                        code_point: c,
                        category,
                        char_index,
                        byte_index: cluster_start + offset,
                    });
                }
                char_index += 1;
            }
        }
        // The name is not empty (NFC never empties a string), so both ends exist.
        let (first, last) = match (name.chars().next(), name.chars().next_back()) {
            (Some(first), Some(last)) => (first, last),
            _ => return Err(ProfileError::DisplayNameEmpty),
        };
        if first.is_whitespace() {
            return Err(ProfileError::DisplayNameSurroundingSpace {
                edge: Edge::Leading,
                code_point: first,
            });
        }
        if last.is_whitespace() {
            return Err(ProfileError::DisplayNameSurroundingSpace {
                edge: Edge::Trailing,
                code_point: last,
            });
        }
        if !visible {
            return Err(ProfileError::DisplayNameInvisible);
        }
        if graphemes > MAX_DISPLAY_NAME_GRAPHEMES {
            return Err(ProfileError::DisplayNameTooLong { graphemes });
        }
        if name.len() > MAX_DISPLAY_NAME_BYTES {
            return Err(ProfileError::DisplayNameTooManyBytes { bytes: name.len() });
        }
        Ok(DisplayName(name.into_boxed_str()))
    }

    /// The name in NFC. O(1).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `c` is a combining mark (`Mn` nonspacing, `Me` enclosing), which draws on the
/// character before it. O(log n) in the category table.
fn is_mark(c: char) -> bool {
    matches!(
        c.general_category(),
        GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark
    )
}

/// Whether the format character `c`, at `position` of the `last + 1` characters of `cluster`, only
/// joins the characters around it, which is the one way an invisible character is allowed.
fn joins_inside(c: char, cluster: &str, position: usize, last: usize) -> bool {
    const ZERO_WIDTH_JOINER: char = '\u{200D}';
    const WAVING_BLACK_FLAG: char = '\u{1F3F4}';
    match c {
        ZERO_WIDTH_JOINER => position > 0 && position < last,
        // Tag characters spell a subdivision after the black flag (🏴 + "gbeng" + cancel tag).
        '\u{E0020}'..='\u{E007F}' => position > 0 && cluster.starts_with(WAVING_BLACK_FLAG),
        _ => false,
    }
}

/// The kind of character a display name may not contain, named by its general category.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForbiddenCategory {
    /// `Cc`: a C0 or C1 control code, such as U+0007 or a tab.
    Control,
    /// `Cf`: an invisible format character, such as U+200B or a bidi override.
    Format,
    /// `Cs`: a surrogate; a Rust string cannot hold one, so this is never reported.
    Surrogate,
    /// `Co`: a private-use character, whose look depends on the reader's font.
    PrivateUse,
    /// `Cn`: a code point not assigned in the Unicode version this service knows.
    Unassigned,
    /// `Cn`: one of the 66 noncharacters (U+FDD0..U+FDEF and each plane's last two).
    Noncharacter,
    /// `Zl`: U+2028 LINE SEPARATOR.
    LineSeparator,
    /// `Zp`: U+2029 PARAGRAPH SEPARATOR.
    ParagraphSeparator,
    /// A letter or symbol by category that draws nothing: the Hangul fillers (U+115F, U+1160,
    /// U+3164, U+FFA0) and the blank Braille pattern (U+2800), used for blank or look-alike names.
    Blank,
}

impl ForbiddenCategory {
    /// Why `c` may not stand in a display name, or `None` if its category allows it. O(log n) in
    /// the size of the category table.
    fn of(c: char) -> Option<ForbiddenCategory> {
        let code = u32::from(c);
        // Noncharacters are `Cn` too; named apart because they are never going to be assigned.
        if (0xFDD0..=0xFDEF).contains(&code) || code & 0xFFFE == 0xFFFE {
            return Some(ForbiddenCategory::Noncharacter);
        }
        if matches!(c, '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{2800}') {
            return Some(ForbiddenCategory::Blank);
        }
        Some(match c.general_category() {
            GeneralCategory::Control => ForbiddenCategory::Control,
            GeneralCategory::Format => ForbiddenCategory::Format,
            GeneralCategory::Surrogate => ForbiddenCategory::Surrogate,
            GeneralCategory::PrivateUse => ForbiddenCategory::PrivateUse,
            GeneralCategory::Unassigned => ForbiddenCategory::Unassigned,
            GeneralCategory::LineSeparator => ForbiddenCategory::LineSeparator,
            GeneralCategory::ParagraphSeparator => ForbiddenCategory::ParagraphSeparator,
            _ => return None,
        })
    }
}

impl fmt::Display for ForbiddenCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ForbiddenCategory::Control => "Cc, control",
            ForbiddenCategory::Format => "Cf, format",
            ForbiddenCategory::Surrogate => "Cs, surrogate",
            ForbiddenCategory::PrivateUse => "Co, private use",
            ForbiddenCategory::Unassigned => "Cn, unassigned",
            ForbiddenCategory::Noncharacter => "Cn, noncharacter",
            ForbiddenCategory::LineSeparator => "Zl, line separator",
            ForbiddenCategory::ParagraphSeparator => "Zp, paragraph separator",
            ForbiddenCategory::Blank => "a blank filler that draws nothing",
        })
    }
}

/// Which end of a display name holds whitespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// The name starts with whitespace.
    Leading,
    /// The name ends with whitespace.
    Trailing,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Edge::Leading => "starts",
            Edge::Trailing => "ends",
        })
    }
}

/// A country as an officially assigned ISO 3166-1 alpha-2 code, such as `DE`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Country([u8; 2]);

impl Country {
    /// Reads an officially assigned ISO 3166-1 alpha-2 code in upper case; a code in another case
    /// is refused with the upper-case form as a hint, so clients send one spelling. O(log n) in
    /// the 249 codes.
    pub fn parse(code: &str) -> Result<Country, ProfileError> {
        if let Ok(letters) = <[u8; 2]>::try_from(code.as_bytes()) {
            if COUNTRY_CODES.binary_search(&letters).is_ok() {
                return Ok(Country(letters));
            }
            let upper = letters.map(|b| b.to_ascii_uppercase());
            if upper != letters && COUNTRY_CODES.binary_search(&upper).is_ok() {
                return Err(ProfileError::CountryNotIso3166 {
                    given: echo(code),
                    suggestion: Some(Country(upper)),
                });
            }
        }
        Err(ProfileError::CountryNotIso3166 {
            given: echo(code),
            suggestion: None,
        })
    }

    /// The two upper-case letters. O(1).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("a Country holds two ASCII letters from the table")
    }
}

impl fmt::Debug for Country {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Country({:?})", self.as_str())
    }
}

/// The start of a refused input, for quoting it in a message: the input is unbounded, the message
/// should not be.
fn echo(given: &str) -> Box<str> {
    const SHOWN: usize = 8;
    match given.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &given[..cut]).into_boxed_str(),
        None => given.into(),
    }
}

/// Checks a score event's `metadata`, the JSON text exactly as sent, against a board whose cap is
/// `max_bytes` (0 refuses any metadata; a cap above `MAX_METADATA_BYTES` is read as that maximum).
/// The text must be a JSON object with each key once, at most the cap in bytes. O(len): the size
/// is checked before the text is read, so at most the cap is parsed.
pub fn check_metadata(raw: &str, max_bytes: usize) -> Result<(), ProfileError> {
    // The board's definition was checked against the maximum already; the clamp keeps a wrong cap
    // from ever widening the service-wide limit.
    let max_bytes = max_bytes.min(MAX_METADATA_BYTES);
    if max_bytes == 0 {
        return Err(ProfileError::MetadataNotAllowed);
    }
    if raw.len() > max_bytes {
        return Err(ProfileError::MetadataTooLarge {
            bytes: raw.len(),
            max_bytes,
        });
    }
    // The service's own reader, so a repeated key is refused here as in every body it reads.
    let value = crate::json_value::read_value(raw.as_bytes()).map_err(|e| match e {
        crate::json_value::ReadError::NotJson(e) => ProfileError::MetadataNotJson {
            reason: e.to_string(),
        },
        crate::json_value::ReadError::RepeatedKey { key, path } => {
            ProfileError::MetadataRepeatedKey { key, path }
        }
    })?;
    let found = match value {
        serde_json::Value::Object(_) => return Ok(()),
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
    };
    Err(ProfileError::MetadataNotObject { found })
}

/// Why a profile field or a score event's metadata is refused. Each case has a stable machine
/// `code` and names its `field`; `Display` is the human message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The display name is the empty string; `null` is how a name is cleared.
    #[error("display_name is empty; send null to clear it")]
    DisplayNameEmpty,
    /// The display name has more than `MAX_DISPLAY_NAME_GRAPHEMES` grapheme clusters.
    #[error(
        "display_name is {graphemes} characters (extended grapheme clusters) long; at most {max} are allowed",
        max = MAX_DISPLAY_NAME_GRAPHEMES
    )]
    DisplayNameTooLong {
        /// How many clusters its NFC form has.
        graphemes: usize,
    },
    /// The display name's NFC form has more than `MAX_DISPLAY_NAME_BYTES` UTF-8 bytes.
    #[error(
        "display_name is {bytes} bytes in UTF-8 (NFC); at most {max} are allowed",
        max = MAX_DISPLAY_NAME_BYTES
    )]
    DisplayNameTooManyBytes {
        /// How many bytes its NFC form has.
        bytes: usize,
    },
    /// The display name holds a character of a forbidden kind; positions count in its NFC form,
    /// which is the text as sent whenever that was NFC already.
    #[error(
        "display_name contains {} ({category}) at char index {char_index} (byte {byte_index}); control, format, private-use, unassigned, noncharacter, blank filler and line or paragraph separator characters are not allowed, except a joiner inside an emoji sequence",
        u_plus(.code_point)
    )]
    DisplayNameForbiddenCharacter {
        /// The character.
        code_point: char,
        /// Its kind.
        category: ForbiddenCategory,
        /// How many characters precede it.
        char_index: usize,
        /// How many bytes precede it.
        byte_index: usize,
    },
    /// A grapheme cluster of the display name carries more than `MAX_MARKS_PER_GRAPHEME`
    /// combining marks.
    #[error(
        "display_name's character {grapheme_index} (extended grapheme cluster) carries {marks} combining marks; at most {max} are allowed",
        max = MAX_MARKS_PER_GRAPHEME
    )]
    DisplayNameTooManyMarks {
        /// How many clusters precede it.
        grapheme_index: usize,
        /// How many marks it carries.
        marks: usize,
    },
    /// The display name has nothing to show: only combining marks and whitespace.
    #[error(
        "display_name shows nothing: it has only combining marks and whitespace; a name needs a visible character"
    )]
    DisplayNameInvisible,
    /// The display name starts or ends with a White_Space character.
    #[error(
        "display_name {edge} with whitespace ({}); leading and trailing whitespace is not allowed",
        u_plus(.code_point)
    )]
    DisplayNameSurroundingSpace {
        /// Which end.
        edge: Edge,
        /// The whitespace character at that end.
        code_point: char,
    },
    /// The country is not an officially assigned ISO 3166-1 alpha-2 code in upper case.
    #[error(
        "country {given:?} is not an officially assigned ISO 3166-1 alpha-2 code{}",
        country_hint(.suggestion)
    )]
    CountryNotIso3166 {
        /// The start of the text sent.
        given: Box<str>,
        /// The code it spells in upper case, when that is an assigned code.
        suggestion: Option<Country>,
    },
    /// The board takes no metadata (its cap is 0 bytes).
    #[error("metadata is not allowed on this board")]
    MetadataNotAllowed,
    /// The metadata's JSON text is longer than the board's cap.
    #[error("metadata is {bytes} bytes; this board allows at most {max_bytes}")]
    MetadataTooLarge {
        /// The length of the text as sent.
        bytes: usize,
        /// The board's cap.
        max_bytes: usize,
    },
    /// The metadata is not JSON text.
    #[error("metadata must be a JSON object but is not JSON: {reason}")]
    MetadataNotJson {
        /// The JSON reader's words.
        reason: String,
    },
    /// The metadata is JSON but not an object.
    #[error("metadata must be a JSON object, not {found}")]
    MetadataNotObject {
        /// What it is instead, in words ("an array").
        found: &'static str,
    },
    /// An object in the metadata names a key twice.
    #[error(
        "metadata must be a JSON object with each key once, but repeats the key {key:?} in the object at {path}"
    )]
    MetadataRepeatedKey {
        /// The repeated key, unescaped.
        key: String,
        /// Where the object sits in the metadata, as `$.car`.
        path: String,
    },
}

/// The codes of the profile's rules, one per rule: a display name's and a country's are 400;
/// metadata's 422, refused as the event that carries it is.
pub mod rule {
    use standings_core::contract::Code;

    /// The display name is empty.
    pub const DISPLAY_NAME_EMPTY: Code = Code::new(400, "DISPLAY_NAME_EMPTY");
    /// The display name has more grapheme clusters than allowed.
    pub const DISPLAY_NAME_TOO_LONG: Code = Code::new(400, "DISPLAY_NAME_TOO_LONG");
    /// The display name is longer in UTF-8 than allowed.
    pub const DISPLAY_NAME_TOO_MANY_BYTES: Code = Code::new(400, "DISPLAY_NAME_TOO_MANY_BYTES");
    /// The display name holds a character no name may hold.
    pub const DISPLAY_NAME_FORBIDDEN_CHARACTER: Code = Code::new(400, "DISPLAY_NAME_FORBIDDEN_CHARACTER");
    /// The display name starts or ends with whitespace.
    pub const DISPLAY_NAME_SURROUNDING_SPACE: Code = Code::new(400, "DISPLAY_NAME_SURROUNDING_SPACE");
    /// A grapheme cluster of the display name carries too many combining marks.
    pub const DISPLAY_NAME_TOO_MANY_MARKS: Code = Code::new(400, "DISPLAY_NAME_TOO_MANY_MARKS");
    /// The display name shows nothing.
    pub const DISPLAY_NAME_INVISIBLE: Code = Code::new(400, "DISPLAY_NAME_INVISIBLE");
    /// The profile body's `display_name` is neither a string nor `null`.
    pub const DISPLAY_NAME_NOT_TEXT: Code = Code::new(400, "DISPLAY_NAME_NOT_TEXT");
    /// The country is not an assigned ISO 3166-1 alpha-2 code in upper case.
    pub const COUNTRY_NOT_ISO_3166: Code = Code::new(400, "COUNTRY_NOT_ISO_3166");
    /// The profile body's `anonymous` is not a boolean.
    pub const ANONYMOUS_NOT_BOOLEAN: Code = Code::new(400, "ANONYMOUS_NOT_BOOLEAN");
    /// The board takes no metadata.
    pub const METADATA_NOT_ALLOWED: Code = Code::new(422, "METADATA_NOT_ALLOWED");
    /// The metadata is longer than the board allows.
    pub const METADATA_TOO_LARGE: Code = Code::new(422, "METADATA_TOO_LARGE");
    /// The metadata is not a JSON object with each key once.
    pub const METADATA_NOT_OBJECT: Code = Code::new(422, "METADATA_NOT_OBJECT");

    /// Every rule's code.
    pub const ALL: &[Code] = &[
        DISPLAY_NAME_EMPTY,
        DISPLAY_NAME_TOO_LONG,
        DISPLAY_NAME_TOO_MANY_BYTES,
        DISPLAY_NAME_FORBIDDEN_CHARACTER,
        DISPLAY_NAME_SURROUNDING_SPACE,
        DISPLAY_NAME_TOO_MANY_MARKS,
        DISPLAY_NAME_INVISIBLE,
        DISPLAY_NAME_NOT_TEXT,
        COUNTRY_NOT_ISO_3166,
        ANONYMOUS_NOT_BOOLEAN,
        METADATA_NOT_ALLOWED,
        METADATA_TOO_LARGE,
        METADATA_NOT_OBJECT,
    ];
}

impl ProfileError {
    /// The refusal's code, one per rule. O(1).
    pub fn code(&self) -> Code {
        match self {
            ProfileError::DisplayNameEmpty => rule::DISPLAY_NAME_EMPTY,
            ProfileError::DisplayNameTooLong { .. } => rule::DISPLAY_NAME_TOO_LONG,
            ProfileError::DisplayNameTooManyBytes { .. } => rule::DISPLAY_NAME_TOO_MANY_BYTES,
            ProfileError::DisplayNameForbiddenCharacter { .. } => rule::DISPLAY_NAME_FORBIDDEN_CHARACTER,
            ProfileError::DisplayNameSurroundingSpace { .. } => rule::DISPLAY_NAME_SURROUNDING_SPACE,
            ProfileError::DisplayNameTooManyMarks { .. } => rule::DISPLAY_NAME_TOO_MANY_MARKS,
            ProfileError::DisplayNameInvisible => rule::DISPLAY_NAME_INVISIBLE,
            ProfileError::CountryNotIso3166 { .. } => rule::COUNTRY_NOT_ISO_3166,
            ProfileError::MetadataNotAllowed => rule::METADATA_NOT_ALLOWED,
            ProfileError::MetadataTooLarge { .. } => rule::METADATA_TOO_LARGE,
            // Unreadable text, another JSON type and a repeated key all break the one rule that
            // metadata is a JSON object; the message says which.
            ProfileError::MetadataNotJson { .. }
            | ProfileError::MetadataNotObject { .. }
            | ProfileError::MetadataRepeatedKey { .. } => rule::METADATA_NOT_OBJECT,
        }
    }

    /// The field the refusal concerns: `display_name`, `country` or `metadata`. O(1).
    pub fn field(&self) -> &'static str {
        match self {
            ProfileError::DisplayNameEmpty
            | ProfileError::DisplayNameTooLong { .. }
            | ProfileError::DisplayNameTooManyBytes { .. }
            | ProfileError::DisplayNameForbiddenCharacter { .. }
            | ProfileError::DisplayNameSurroundingSpace { .. }
            | ProfileError::DisplayNameTooManyMarks { .. }
            | ProfileError::DisplayNameInvisible => "display_name",
            ProfileError::CountryNotIso3166 { .. } => "country",
            ProfileError::MetadataNotAllowed
            | ProfileError::MetadataTooLarge { .. }
            | ProfileError::MetadataNotJson { .. }
            | ProfileError::MetadataNotObject { .. }
            | ProfileError::MetadataRepeatedKey { .. } => "metadata",
        }
    }
}

/// A code point as Unicode writes it, `U+00A0`.
fn u_plus(c: &char) -> String {
    format!("U+{:04X}", u32::from(*c))
}

/// The end of a country message: the upper-case form when that is the code meant.
fn country_hint(suggestion: &Option<Country>) -> String {
    match suggestion {
        Some(country) => format!("; codes are upper case: send {:?}", country.as_str()),
        None => "; send two upper-case letters such as \"DE\"".to_owned(),
    }
}

/// The officially assigned ISO 3166-1 alpha-2 codes, sorted for `binary_search`. Reserved and
/// withdrawn codes (`UK`, `EU`, `XK`, `AN`) are not countries a profile may name.
const COUNTRY_CODES: [[u8; 2]; 249] = [
    *b"AD", *b"AE", *b"AF", *b"AG", *b"AI", *b"AL", *b"AM", *b"AO", *b"AQ", *b"AR", *b"AS", *b"AT", *b"AU",
    *b"AW", *b"AX", *b"AZ", *b"BA", *b"BB", *b"BD", *b"BE", *b"BF", *b"BG", *b"BH", *b"BI", *b"BJ", *b"BL",
    *b"BM", *b"BN", *b"BO", *b"BQ", *b"BR", *b"BS", *b"BT", *b"BV", *b"BW", *b"BY", *b"BZ", *b"CA", *b"CC",
    *b"CD", *b"CF", *b"CG", *b"CH", *b"CI", *b"CK", *b"CL", *b"CM", *b"CN", *b"CO", *b"CR", *b"CU", *b"CV",
    *b"CW", *b"CX", *b"CY", *b"CZ", *b"DE", *b"DJ", *b"DK", *b"DM", *b"DO", *b"DZ", *b"EC", *b"EE", *b"EG",
    *b"EH", *b"ER", *b"ES", *b"ET", *b"FI", *b"FJ", *b"FK", *b"FM", *b"FO", *b"FR", *b"GA", *b"GB", *b"GD",
    *b"GE", *b"GF", *b"GG", *b"GH", *b"GI", *b"GL", *b"GM", *b"GN", *b"GP", *b"GQ", *b"GR", *b"GS", *b"GT",
    *b"GU", *b"GW", *b"GY", *b"HK", *b"HM", *b"HN", *b"HR", *b"HT", *b"HU", *b"ID", *b"IE", *b"IL", *b"IM",
    *b"IN", *b"IO", *b"IQ", *b"IR", *b"IS", *b"IT", *b"JE", *b"JM", *b"JO", *b"JP", *b"KE", *b"KG", *b"KH",
    *b"KI", *b"KM", *b"KN", *b"KP", *b"KR", *b"KW", *b"KY", *b"KZ", *b"LA", *b"LB", *b"LC", *b"LI", *b"LK",
    *b"LR", *b"LS", *b"LT", *b"LU", *b"LV", *b"LY", *b"MA", *b"MC", *b"MD", *b"ME", *b"MF", *b"MG", *b"MH",
    *b"MK", *b"ML", *b"MM", *b"MN", *b"MO", *b"MP", *b"MQ", *b"MR", *b"MS", *b"MT", *b"MU", *b"MV", *b"MW",
    *b"MX", *b"MY", *b"MZ", *b"NA", *b"NC", *b"NE", *b"NF", *b"NG", *b"NI", *b"NL", *b"NO", *b"NP", *b"NR",
    *b"NU", *b"NZ", *b"OM", *b"PA", *b"PE", *b"PF", *b"PG", *b"PH", *b"PK", *b"PL", *b"PM", *b"PN", *b"PR",
    *b"PS", *b"PT", *b"PW", *b"PY", *b"QA", *b"RE", *b"RO", *b"RS", *b"RU", *b"RW", *b"SA", *b"SB", *b"SC",
    *b"SD", *b"SE", *b"SG", *b"SH", *b"SI", *b"SJ", *b"SK", *b"SL", *b"SM", *b"SN", *b"SO", *b"SR", *b"SS",
    *b"ST", *b"SV", *b"SX", *b"SY", *b"SZ", *b"TC", *b"TD", *b"TF", *b"TG", *b"TH", *b"TJ", *b"TK", *b"TL",
    *b"TM", *b"TN", *b"TO", *b"TR", *b"TT", *b"TV", *b"TW", *b"TZ", *b"UA", *b"UG", *b"UM", *b"US", *b"UY",
    *b"UZ", *b"VA", *b"VC", *b"VE", *b"VG", *b"VI", *b"VN", *b"VU", *b"WF", *b"WS", *b"YE", *b"YT", *b"ZA",
    *b"ZM", *b"ZW",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn name_error(input: &str) -> ProfileError {
        match DisplayName::parse(input) {
            Err(e) => e,
            Ok(name) => panic!("{input:?} was accepted as {:?}", name.as_str()),
        }
    }

    fn forbidden_at(input: &str) -> (char, ForbiddenCategory, usize, usize) {
        match name_error(input) {
            ProfileError::DisplayNameForbiddenCharacter {
                code_point,
                category,
                char_index,
                byte_index,
            } => (code_point, category, char_index, byte_index),
            other => panic!("{input:?}: expected a forbidden character, got {other:?}"),
        }
    }

    /// Plain names, inner single spaces and mixed scripts are accepted unchanged.
    #[test]
    fn ordinary_names_are_accepted() {
        for input in ["Ava", "Ava Lee", "Zoë", "李小龍", "Ана-Мария", "a", "O'Brien 3"] {
            assert_eq!(DisplayName::parse(input).unwrap().as_str(), input);
        }
    }

    /// A decomposed "é" is stored composed and counts as one cluster.
    #[test]
    fn names_are_stored_in_nfc() {
        let name = DisplayName::parse("Rene\u{301}").unwrap();
        assert_eq!(name.as_str(), "Ren\u{e9}");
        assert_eq!(name, DisplayName::parse("Ren\u{e9}").unwrap());
        let long = "e\u{301}".repeat(MAX_DISPLAY_NAME_GRAPHEMES);
        assert_eq!(DisplayName::parse(&long).unwrap().as_str(), "\u{e9}".repeat(32));
    }

    /// The empty string is refused with its own code (null clears a name).
    #[test]
    fn empty_is_refused() {
        let e = name_error("");
        assert_eq!(e, ProfileError::DisplayNameEmpty);
        assert_eq!((e.code().name, e.field()), ("DISPLAY_NAME_EMPTY", "display_name"));
        assert!(e.to_string().contains("null"));
    }

    /// 32 clusters pass and 33 are refused with the count and the maximum in the message.
    #[test]
    fn length_counts_grapheme_clusters() {
        assert!(DisplayName::parse(&"a".repeat(32)).is_ok());
        let e = name_error(&"a".repeat(33));
        assert_eq!(e, ProfileError::DisplayNameTooLong { graphemes: 33 });
        assert_eq!(e.code().name, "DISPLAY_NAME_TOO_LONG");
        assert!(
            e.to_string().contains("33") && e.to_string().contains("32"),
            "{e}"
        );
        // Flags are two code points and one cluster.
        assert!(DisplayName::parse(&"🇩🇪".repeat(16)).is_ok());
    }

    /// ZWJ emoji sequences count as one cluster each; the byte cap holds whatever the count.
    #[test]
    fn emoji_sequences_are_clusters_and_bytes_are_capped() {
        let technologist = "👩\u{200D}💻"; // 11 bytes, one cluster.
        let family = "👨\u{200D}👩\u{200D}👧"; // 18 bytes, one cluster.
        let mixed = format!("{}{}{}", technologist.repeat(5), family, "a".repeat(26));
        assert_eq!((mixed.graphemes(true).count(), mixed.len()), (32, 99));
        assert_eq!(DisplayName::parse(&mixed).unwrap().as_str(), mixed);

        let exactly = "😀".repeat(32);
        assert_eq!(exactly.len(), 128);
        assert!(DisplayName::parse(&exactly).is_ok());

        let over = technologist.repeat(32);
        assert_eq!(over.graphemes(true).count(), 32);
        let e = name_error(&over);
        assert_eq!(e, ProfileError::DisplayNameTooManyBytes { bytes: 352 });
        assert_eq!(e.code().name, "DISPLAY_NAME_TOO_MANY_BYTES");
        assert!(
            e.to_string().contains("352") && e.to_string().contains("128"),
            "{e}"
        );

        let under = format!("{}{}", "😀".repeat(31), "é");
        assert_eq!((under.graphemes(true).count(), under.len()), (32, 126));
        assert!(DisplayName::parse(&under).is_ok());
        // A combining mark that has no composed form with "€" keeps the cluster at 5 bytes.
        let one_over = format!("{}{}", "😀".repeat(31), "\u{20AC}\u{301}");
        assert_eq!(one_over.graphemes(true).count(), 32);
        assert_eq!(
            name_error(&one_over),
            ProfileError::DisplayNameTooManyBytes { bytes: 129 }
        );
    }

    /// A letter under 60 accents (one cluster, 121 bytes) is refused by its mark count, and a
    /// name that draws nothing (fillers, a blank Braille pattern, a lone accent) is refused;
    /// Vietnamese and pointed Hebrew, with their two or three marks, pass.
    #[test]
    fn names_that_draw_outside_their_row_or_show_nothing_are_refused() {
        // NFC composes the first accent with the letter (á), which leaves 59 marks.
        let zalgo = format!("a{}", "\u{301}".repeat(60));
        let e = name_error(&zalgo);
        assert_eq!(
            e,
            ProfileError::DisplayNameTooManyMarks {
                grapheme_index: 0,
                marks: 59
            }
        );
        assert_eq!(
            (e.code().name, e.field()),
            ("DISPLAY_NAME_TOO_MANY_MARKS", "display_name")
        );
        assert!(e.to_string().contains("59 combining marks; at most 4"), "{e}");
        let e = name_error(&format!("Ava x{}", "\u{301}\u{302}\u{303}\u{304}\u{306}"));
        assert_eq!(
            e,
            ProfileError::DisplayNameTooManyMarks {
                grapheme_index: 4,
                marks: 5
            }
        );
        for ok in ["Nguyễn Thị Ánh", "שָׁלוֹם", "a\u{301}\u{302}\u{303}\u{304}"] {
            assert!(DisplayName::parse(ok).is_ok(), "{ok}");
        }
        use ForbiddenCategory::Blank;
        assert_eq!(forbidden_at("\u{3164}"), ('\u{3164}', Blank, 0, 0));
        assert_eq!(forbidden_at("\u{2800}"), ('\u{2800}', Blank, 0, 0));
        assert_eq!(forbidden_at("\u{115F}\u{1160}"), ('\u{115F}', Blank, 0, 0));
        assert_eq!(forbidden_at("Ava\u{FFA0}"), ('\u{FFA0}', Blank, 3, 3));
        for invisible in ["\u{301}", "\u{301}\u{302}", "\u{301} \u{302}"] {
            let e = name_error(invisible);
            assert_eq!(e, ProfileError::DisplayNameInvisible, "{invisible:?}");
            assert_eq!(e.code().name, "DISPLAY_NAME_INVISIBLE");
        }
    }

    /// Control, format, private-use, unassigned, noncharacter and separator characters are
    /// refused with the code point, its category and where it is.
    #[test]
    fn forbidden_characters_are_named_with_their_place() {
        use ForbiddenCategory::*;
        assert_eq!(forbidden_at("Ava\u{200B}"), ('\u{200B}', Format, 3, 3));
        assert_eq!(forbidden_at("é\u{E000}"), ('\u{E000}', PrivateUse, 1, 2));
        assert_eq!(forbidden_at("\u{7}Ava"), ('\u{7}', Control, 0, 0));
        assert_eq!(forbidden_at("Ava\u{2028}Lee"), ('\u{2028}', LineSeparator, 3, 3));
        assert_eq!(
            forbidden_at("Ava\u{2029}Lee"),
            ('\u{2029}', ParagraphSeparator, 3, 3)
        );
        assert_eq!(forbidden_at("Ava\tLee"), ('\t', Control, 3, 3));
        assert_eq!(forbidden_at("A\u{202E}va"), ('\u{202E}', Format, 1, 1));
        assert_eq!(forbidden_at("A\u{FDD0}"), ('\u{FDD0}', Noncharacter, 1, 1));
        assert_eq!(forbidden_at("A\u{10FFFF}"), ('\u{10FFFF}', Noncharacter, 1, 1));
        assert_eq!(forbidden_at("A\u{E0080}"), ('\u{E0080}', Unassigned, 1, 1));
        assert_eq!(forbidden_at("A\u{F0000}"), ('\u{F0000}', PrivateUse, 1, 1));
        // Positions count in the NFC form: the decomposed "é" before it is one character.
        assert_eq!(forbidden_at("e\u{301}\u{200B}"), ('\u{200B}', Format, 1, 2));

        let e = name_error("Ava\u{200B}");
        assert_eq!(
            (e.code().name, e.field()),
            ("DISPLAY_NAME_FORBIDDEN_CHARACTER", "display_name")
        );
        let message = e.to_string();
        for part in ["U+200B", "Cf, format", "char index 3", "byte 3"] {
            assert!(message.contains(part), "{message:?} lacks {part:?}");
        }
    }

    /// A joiner is allowed only inside its cluster; alone or at a cluster's end it is refused.
    #[test]
    fn joiners_only_join() {
        let england = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}";
        assert_eq!(england.graphemes(true).count(), 1);
        assert!(DisplayName::parse(&format!("Ava {england}")).is_ok());
        assert!(DisplayName::parse("क्\u{200D}ष").is_ok());
        use ForbiddenCategory::Format;
        assert_eq!(forbidden_at("\u{200D}Ava"), ('\u{200D}', Format, 0, 0));
        assert_eq!(forbidden_at("Ava\u{200D}"), ('\u{200D}', Format, 3, 3));
        assert_eq!(forbidden_at("A\u{200D}va"), ('\u{200D}', Format, 1, 1));
        assert_eq!(forbidden_at("A\u{E0067}"), ('\u{E0067}', Format, 1, 1));
        assert_eq!(forbidden_at("A\u{200C}b"), ('\u{200C}', Format, 1, 1));
    }

    /// Any White_Space character at either end is refused, inner spaces are not.
    #[test]
    fn surrounding_whitespace_is_refused() {
        for (input, edge, code_point) in [
            ("\u{3000}Ava", Edge::Leading, '\u{3000}'),
            (" Ava", Edge::Leading, ' '),
            ("Ava\u{A0}", Edge::Trailing, '\u{A0}'),
            ("Ava ", Edge::Trailing, ' '),
            ("   ", Edge::Leading, ' '),
        ] {
            let e = name_error(input);
            assert_eq!(e, ProfileError::DisplayNameSurroundingSpace { edge, code_point });
            assert_eq!(e.code().name, "DISPLAY_NAME_SURROUNDING_SPACE");
        }
        assert!(name_error("\u{3000}Ava").to_string().contains("U+3000"));
        assert!(DisplayName::parse("Ava\u{3000}Lee").is_ok());
    }

    /// The country table is the 249 officially assigned codes, sorted, upper case.
    #[test]
    fn the_country_table_is_sorted_and_complete() {
        assert_eq!(COUNTRY_CODES.len(), 249);
        assert!(COUNTRY_CODES.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(COUNTRY_CODES.iter().flatten().all(u8::is_ascii_uppercase));
        for code in COUNTRY_CODES {
            let text = std::str::from_utf8(&code).unwrap();
            assert_eq!(Country::parse(text).unwrap().as_str(), text);
        }
    }

    /// An assigned upper-case code is accepted; lower case is refused with the upper-case hint;
    /// unassigned codes and other lengths are refused without one.
    #[test]
    fn countries_are_assigned_upper_case_codes() {
        assert_eq!(Country::parse("DE").unwrap().as_str(), "DE");
        for given in ["de", "De", "dE"] {
            let e = Country::parse(given).unwrap_err();
            assert_eq!(
                e,
                ProfileError::CountryNotIso3166 {
                    given: given.into(),
                    suggestion: Some(Country(*b"DE")),
                }
            );
            assert_eq!((e.code().name, e.field()), ("COUNTRY_NOT_ISO_3166", "country"));
            assert!(e.to_string().contains("send \"DE\""), "{e}");
        }
        for given in ["XX", "xx", "DEU", "D", "", "UK", "EU", "é", "D1", "DE ", "ÄÖ"] {
            let e = Country::parse(given).unwrap_err();
            assert!(
                matches!(&e, ProfileError::CountryNotIso3166 { suggestion: None, .. }),
                "{given:?}: {e:?}"
            );
            assert!(!e.to_string().contains("upper case:"), "{e}");
        }
        let long = "Federal Republic of Germany";
        let e = Country::parse(long).unwrap_err();
        assert!(e.to_string().contains("\"Federal …\""), "{e}");
    }

    /// An object within the cap passes; other JSON, a repeated key, an oversize object and any
    /// metadata on a board with cap 0 are refused with their codes.
    #[test]
    fn metadata_is_a_small_json_object() {
        assert_eq!(check_metadata(r#"{"car":"R8"}"#, MAX_METADATA_BYTES), Ok(()));
        assert_eq!(check_metadata("{}", 2), Ok(()));

        for (raw, found) in [("[1]", "an array"), ("\"R8\"", "a string"), ("null", "null")] {
            let e = check_metadata(raw, 256).unwrap_err();
            assert_eq!(e, ProfileError::MetadataNotObject { found });
            assert_eq!((e.code().name, e.field()), ("METADATA_NOT_OBJECT", "metadata"));
        }
        let e = check_metadata("{\"car\":", 256).unwrap_err();
        assert!(matches!(e, ProfileError::MetadataNotJson { .. }), "{e:?}");
        assert_eq!(e.code().name, "METADATA_NOT_OBJECT");

        let e = check_metadata(r#"{"car":"R8","car":"A4"}"#, 256).unwrap_err();
        assert_eq!(
            e,
            ProfileError::MetadataRepeatedKey {
                key: "car".into(),
                path: "$".into()
            }
        );
        assert_eq!(e.code().name, "METADATA_NOT_OBJECT");
        assert!(e.to_string().contains("repeats the key \"car\""), "{e}");

        let at_cap = format!(r#"{{"note":"{}"}}"#, "x".repeat(256 - 11));
        assert_eq!(at_cap.len(), 256);
        assert_eq!(check_metadata(&at_cap, 256), Ok(()));
        let over = format!(r#"{{"note":"{}"}}"#, "x".repeat(257 - 11));
        let e = check_metadata(&over, 256).unwrap_err();
        assert_eq!(
            e,
            ProfileError::MetadataTooLarge {
                bytes: 257,
                max_bytes: 256
            }
        );
        assert_eq!(e.code().name, "METADATA_TOO_LARGE");
        assert!(
            e.to_string().contains("257") && e.to_string().contains("256"),
            "{e}"
        );
        // A cap above the service's maximum does not widen it.
        assert_eq!(check_metadata(&over, 10_000), Err(e));

        for raw in ["{}", r#"{"car":"R8"}"#, ""] {
            let e = check_metadata(raw, 0).unwrap_err();
            assert_eq!(e, ProfileError::MetadataNotAllowed);
            assert_eq!((e.code().name, e.field()), ("METADATA_NOT_ALLOWED", "metadata"));
        }
    }
}
