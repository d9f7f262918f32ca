//! The shared workload: a deterministic, skewed population of players that both Standings and
//! Redis hold, and the wire spellings of its ids, scores and times.

/// 2025-10-13T00:00:00Z in ms, as in the core's benches.
pub const T0: i64 = 1_760_313_600_000;

/// Each member's `achieved_at` lies in its own window of this many ms after [`T0`], so no two
/// members share a time and the order is the same on both sides (Redis breaks ties by member
/// bytes, descending; Standings by earliest time, then id bytes, ascending).
pub const MS_PER_MEMBER: i64 = 60;

/// Scores are drawn from `u^4 x MAX_VALUE`, so they fit in 20 bits.
pub const MAX_VALUE: f64 = 1_000_000.0;
const VALUE_BITS: u32 = 20;

/// A small deterministic PRNG (splitmix64), the same as the core's benches use.
pub struct Rng(pub u64);

impl Rng {
    /// A generator for stream `stream` of a run seeded with `seed`: each connection of each
    /// workload draws its own stream, and the two sides of a comparison draw the same ones.
    pub fn stream(seed: u64, stream: u64) -> Rng {
        let mut mixer = Rng(seed ^ stream.wrapping_mul(0xd6e8_feb8_6659_fd93));
        Rng(mixer.next_u64())
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `0..n` (`n > 0`); the modulo bias is negligible for our `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A skewed value: most players low, few high, so low values are crowded as on real boards.
    pub fn skewed_value(&mut self) -> i64 {
        let u = self.unit();
        (u * u * u * u * MAX_VALUE) as i64
    }
}

/// One player's best score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standing {
    /// The value.
    pub value: i64,
    /// When it was achieved, ms since the epoch.
    pub achieved_at: i64,
}

/// The population: `members` players, player `i` holding [`Population::standing`].
#[derive(Clone, Copy, Debug)]
pub struct Population {
    /// How many players.
    pub members: u64,
    /// The seed of every draw.
    pub seed: u64,
    /// How many low bits of a Redis score hold the time (the value sits above them).
    time_bits: u32,
}

impl Population {
    /// A population of `members` players; refuses sizes whose composite Redis scores would not
    /// be exact in a double.
    pub fn new(members: u64, seed: u64) -> Result<Population, String> {
        let span = members.max(1) * MS_PER_MEMBER as u64;
        let time_bits = 64 - span.leading_zeros();
        if time_bits + VALUE_BITS > 53 {
            return Err(format!("{members} members are too many for exact Redis scores"));
        }
        Ok(Population {
            members,
            seed,
            time_bits,
        })
    }

    /// The standing player `i` is loaded with. O(1), no state.
    pub fn standing(&self, i: u64) -> Standing {
        let mut rng = Rng::stream(self.seed, i ^ 0x5eed_0000_0000_0000);
        let value = rng.skewed_value();
        let offset = i as i64 * MS_PER_MEMBER + rng.below(MS_PER_MEMBER as u64) as i64;
        Standing {
            value,
            achieved_at: T0 + offset,
        }
    }

    /// A fresh score for a later submission: a skewed value at a time inside the population's
    /// time span.
    pub fn fresh_standing(&self, rng: &mut Rng) -> Standing {
        let value = rng.skewed_value();
        let offset = rng.below(self.members.max(1) * MS_PER_MEMBER as u64) as i64;
        Standing {
            value,
            achieved_at: T0 + offset,
        }
    }

    /// The Redis score that orders like Standings' `highest` board: the value above, the time
    /// (earlier is better, so inverted) below. Exact in a double by construction.
    pub fn redis_score(&self, standing: Standing) -> u64 {
        let offset = (standing.achieved_at - T0) as u64;
        let time_part = ((1u64 << self.time_bits) - 1) - offset;
        ((standing.value as u64) << self.time_bits) | time_part
    }
}

/// The id of player `i`: `player-` and 16 hex digits, 23 bytes, in no particular order (the
/// same ids as the core's benches).
pub fn player_id(i: u64) -> [u8; 23] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bits = Rng(i).next_u64();
    let mut id = *b"player-0000000000000000";
    for (k, slot) in id[7..].iter_mut().enumerate() {
        *slot = HEX[((bits >> (60 - 4 * k)) & 0xf) as usize];
    }
    id
}

/// Appends a decimal integer without allocating.
pub fn push_int(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends `ms` since the epoch as RFC 3339 in UTC with milliseconds
/// (`2025-10-13T10:05:00.123Z`).
pub fn push_rfc3339(out: &mut Vec<u8>, ms: i64) {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let of_day = secs.rem_euclid(86_400);
    let two = |out: &mut Vec<u8>, n: i64| {
        out.push(b'0' + (n / 10) as u8);
        out.push(b'0' + (n % 10) as u8);
    };
    push_int(out, year);
    out.push(b'-');
    two(out, month);
    out.push(b'-');
    two(out, day);
    out.push(b'T');
    two(out, of_day / 3600);
    out.push(b':');
    two(out, of_day / 60 % 60);
    out.push(b':');
    two(out, of_day % 60);
    out.push(b'.');
    out.push(b'0' + (millis / 100) as u8);
    two(out, millis % 100);
    out.push(b'Z');
}

/// Reads an RFC 3339 time in UTC as the service prints it (`2026-10-13T10:05:00Z`, with or
/// without a fraction of a second, kept to ms) back into ms since the epoch; `None` for anything
/// else. The inverse of [`push_rfc3339`]. (The core's `json::parse_rfc3339` does the same for
/// any offset, behind a feature this crate does not build.)
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let (body, rest) = (b.get(..19)?, &b[19..]);
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        body[range].iter().try_fold(0i64, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    if [4, 7, 10, 13, 16].map(|at| body[at]) != [b'-', b'-', b'T', b':', b':'] {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let rest = rest.strip_suffix(b"Z")?;
    let millis = match rest.strip_prefix(b".") {
        None if rest.is_empty() => 0,
        Some(fraction) if !fraction.is_empty() && fraction.iter().all(u8::is_ascii_digit) => fraction
            .iter()
            .chain(b"00")
            .take(3)
            .fold(0i64, |n, &d| n * 10 + i64::from(d - b'0')),
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

/// The day count since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm),
/// the inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times print as the origin's parser expects them.
    #[test]
    fn rfc3339_of_known_instants() {
        let mut out = Vec::new();
        push_rfc3339(&mut out, T0 + 36_300_123);
        assert_eq!(out, b"2025-10-13T10:05:00.123Z");
        out.clear();
        push_rfc3339(&mut out, 951_782_400_000);
        assert_eq!(out, b"2000-02-29T00:00:00.000Z");
    }

    /// What `push_rfc3339` prints reads back to the same ms, and the service's shorter forms
    /// (no fraction, a fraction without trailing zeros) read as they should.
    #[test]
    fn rfc3339_reads_back() {
        for ms in [0, T0 + 36_300_123, 951_782_400_000, 4_102_444_799_999, 86_399_999] {
            let mut out = Vec::new();
            push_rfc3339(&mut out, ms);
            assert_eq!(parse_rfc3339(std::str::from_utf8(&out).unwrap()), Some(ms));
        }
        assert_eq!(parse_rfc3339("2025-10-13T10:05:00Z"), Some(T0 + 36_300_000));
        assert_eq!(parse_rfc3339("2025-10-13T10:05:00.5Z"), Some(T0 + 36_300_500));
        assert_eq!(parse_rfc3339("2025-10-13T10:05:00.25Z"), Some(T0 + 36_300_250));
        for bad in [
            "2025-10-13T10:05:00",
            "2025-10-13 10:05:00Z",
            "2025-13-13T10:05:00Z",
            "2025-10-13T10:05:00.Z",
            "",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    /// Player ids are the core benches' ids.
    #[test]
    fn player_ids_match_the_benches() {
        let mut rng = Rng(7);
        assert_eq!(
            player_id(7).to_vec(),
            format!("player-{:016x}", rng.next_u64()).into_bytes()
        );
    }

    /// Composite Redis scores order exactly as the `highest` board does.
    #[test]
    fn redis_scores_order_like_the_board() {
        let population = Population::new(1_000, 1).unwrap();
        let a = Standing {
            value: 5,
            achieved_at: T0 + 10,
        };
        let b = Standing {
            value: 5,
            achieved_at: T0 + 20,
        };
        let c = Standing {
            value: 6,
            achieved_at: T0 + 59_999,
        };
        assert!(population.redis_score(a) > population.redis_score(b));
        assert!(population.redis_score(c) > population.redis_score(a));
    }
}
