//! A season's reward bands (`docs/feed.md`): rank ranges mapped to reward ids, declared when
//! the season is finalized, and what each result awards. Pure: the log's actions keep the
//! awards of each board's latest result (`Moderation`), so a correction tells exactly whose
//! reward changed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RankedEntry;

/// The most bands a season declares.
pub(crate) const MAX_BANDS: usize = 32;

/// The last rank a band may reach: a result's reward records number at most this per board.
pub(crate) const MAX_RANK: u64 = 1_000_000;

/// The longest reward id, in bytes.
const MAX_REWARD_BYTES: usize = 64;

/// Ranks `from..=to` (1-based, by the total order: ties are already broken) earn `reward`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RewardBand {
    pub(crate) ranks: [u64; 2],
    pub(crate) reward: String,
}

/// Checks a season's bands as sent: at most [`MAX_BANDS`], each `ranks: [from, to]` with
/// `1 <= from <= to <=` [`MAX_RANK`], none overlapping another, and a reward id of 1 to 64
/// characters among `A-Z a-z 0-9 _ - . :`. Answers them sorted by rank. O(bands log bands).
pub(crate) fn checked(mut bands: Vec<RewardBand>) -> Result<Vec<RewardBand>, String> {
    if bands.len() > MAX_BANDS {
        return Err(format!(
            "rewards has {} bands; a season declares at most {MAX_BANDS}",
            bands.len()
        ));
    }
    for band in &bands {
        let [from, to] = band.ranks;
        if from < 1 || to < from || to > MAX_RANK {
            return Err(format!(
                "reward {:?} has ranks [{from}, {to}]; ranks are [from, to] with 1 <= from <= to <= {MAX_RANK}",
                band.reward
            ));
        }
        let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':');
        if band.reward.is_empty() || band.reward.len() > MAX_REWARD_BYTES || !band.reward.chars().all(fine) {
            return Err(format!(
                "reward id {:?} must be 1 to {MAX_REWARD_BYTES} characters among A-Z a-z 0-9 _ - . :",
                band.reward
            ));
        }
    }
    bands.sort();
    for pair in bands.windows(2) {
        if pair[1].ranks[0] <= pair[0].ranks[1] {
            return Err(format!(
                "reward bands [{}, {}] ({}) and [{}, {}] ({}) overlap; a rank earns one reward",
                pair[0].ranks[0],
                pair[0].ranks[1],
                pair[0].reward,
                pair[1].ranks[0],
                pair[1].ranks[1],
                pair[1].reward
            ));
        }
    }
    Ok(bands)
}

/// What one result awards: each rewarded player's reward and rank. O(rewarded players x log
/// bands), reading only the entries the bands reach (entries are in rank order).
pub(crate) fn awards(bands: &[RewardBand], entries: &[RankedEntry]) -> BTreeMap<String, (String, u64)> {
    let mut awarded = BTreeMap::new();
    for band in bands {
        let [from, to] = band.ranks;
        let start = usize::try_from(from - 1).unwrap_or(usize::MAX).min(entries.len());
        let end = usize::try_from(to).unwrap_or(usize::MAX).min(entries.len());
        for entry in &entries[start..end] {
            awarded.insert(entry.player_id.clone(), (band.reward.clone(), entry.rank));
        }
    }
    awarded
}

/// One player's reward as a result changes it: `reward` now (`None`: none any more) and
/// `previous` (`None` for the first result, or a player who had none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Award {
    pub(crate) player: String,
    pub(crate) rank: Option<u64>,
    pub(crate) reward: Option<String>,
    pub(crate) previous: Option<String>,
}

/// The awards that differ between the last result's `before` (player to reward) and
/// `after`, in player order: a reward won, lost or changed, or the same reward at another
/// rank (a correction that moves a rewarded player tells them). O(before + after).
pub(crate) fn changed(
    before: &BTreeMap<String, (String, u64)>,
    after: &BTreeMap<String, (String, u64)>,
) -> Vec<Award> {
    let mut out = Vec::new();
    for (player, (reward, rank)) in after {
        let previous = before.get(player);
        if previous != Some(&(reward.clone(), *rank)) {
            out.push(Award {
                player: player.clone(),
                rank: Some(*rank),
                reward: Some(reward.clone()),
                previous: previous.map(|(r, _)| r.clone()),
            });
        }
    }
    for (player, (reward, _)) in before {
        if !after.contains_key(player) {
            out.push(Award {
                player: player.clone(),
                rank: None,
                reward: None,
                previous: Some(reward.clone()),
            });
        }
    }
    out.sort_by(|a, b| a.player.cmp(&b.player));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(from: u64, to: u64, reward: &str) -> RewardBand {
        RewardBand {
            ranks: [from, to],
            reward: reward.into(),
        }
    }

    fn entry(player: &str, rank: u64) -> RankedEntry {
        RankedEntry {
            achieved_at: 0,
            anonymous: false,
            country: None,
            display_name: None,
            metadata: None,
            player_id: player.into(),
            rank,
            segments: None,
            value: 100 - rank as i64,
        }
    }

    #[test]
    fn bands_are_checked_with_words() {
        assert_eq!(
            checked(vec![band(2, 10, "silver"), band(1, 1, "gold")]).unwrap(),
            vec![band(1, 1, "gold"), band(2, 10, "silver")]
        );
        let overlap = checked(vec![band(1, 5, "a"), band(5, 9, "b")]).unwrap_err();
        assert!(overlap.contains("overlap"), "{overlap}");
        assert!(checked(vec![band(0, 1, "a")]).unwrap_err().contains("1 <= from"));
        assert!(checked(vec![band(3, 2, "a")]).is_err());
        assert!(checked(vec![band(1, MAX_RANK + 1, "a")]).is_err());
        assert!(checked(vec![band(1, 1, "")]).unwrap_err().contains("reward id"));
        assert!(checked(vec![band(1, 1, "gold crown")]).is_err());
        assert!(
            checked((1..=33).map(|r| band(r, r, "x")).collect())
                .unwrap_err()
                .contains("at most 32")
        );
    }

    #[test]
    fn a_result_awards_the_ranks_its_bands_reach() {
        let entries: Vec<_> = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(i, p)| entry(p, i as u64 + 1))
            .collect();
        let bands = [band(1, 1, "gold"), band(2, 3, "silver"), band(10, 20, "never")];
        let got = awards(&bands, &entries);
        assert_eq!(got.len(), 3);
        assert_eq!(got["a"], ("gold".into(), 1));
        assert_eq!(got["c"], ("silver".into(), 3));
        assert!(!got.contains_key("d"));
    }

    #[test]
    fn a_correction_tells_whose_reward_changed() {
        let bands = [band(1, 1, "gold"), band(2, 3, "silver")];
        let before = awards(
            &bands,
            &[entry("a", 1), entry("b", 2), entry("c", 3), entry("d", 4)],
        );
        // "a" was disqualified: everyone moves up one.
        let after = awards(&bands, &[entry("b", 1), entry("c", 2), entry("d", 3)]);
        let got = changed(&before, &after);
        let names: Vec<_> = got
            .iter()
            .map(|a| {
                (
                    a.player.as_str(),
                    a.reward.as_deref(),
                    a.previous.as_deref(),
                    a.rank,
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("a", None, Some("gold"), None),
                ("b", Some("gold"), Some("silver"), Some(1)),
                ("c", Some("silver"), Some("silver"), Some(2)),
                ("d", Some("silver"), None, Some(3)),
            ]
        );
        assert!(changed(&after, &after).is_empty());
    }
}
