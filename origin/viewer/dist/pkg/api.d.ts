export { I64_MAX, I64_MIN, parseExact, stringifyExact, type ExactValue, type Instant } from "./exact.js";
export { compare, rankFriends, type Friend, type FriendsRanking, type RankedFriend, type Rules, type ScoreMode, type Standing, } from "./order.js";
export { SnapshotReader, type Entry, type EntryExtras, type Fetch, type Head, type NearbyAnswer, type PeriodFields, type RankAnswer, type SegmentEntry, type SegmentNearbyAnswer, type SegmentRankAnswer, type SegmentTopAnswer, type TopAnswer, } from "./snapshot.js";
export { LiveBoard, type LiveBoardOptions, type LiveEntry, type LiveStatus, type Transport } from "./live.js";
