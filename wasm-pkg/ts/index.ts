// The package's browser entry: it instantiates the WebAssembly module once, at import (which is
// why package.json lists this file under sideEffects), then exports the API.
import init from "./standings_wasm.js";

await init({ module_or_path: new URL("./standings_wasm_bg.wasm", import.meta.url) });

export { I64_MAX, I64_MIN, parseExact, type ExactValue, type Instant } from "./exact.js";
export {
  compare,
  rankFriends,
  type Friend,
  type FriendsRanking,
  type RankedFriend,
  type Rules,
  type ScoreMode,
  type Standing,
} from "./order.js";
export {
  SnapshotReader,
  type Entry,
  type Fetch,
  type Head,
  type NearbyAnswer,
  type PeriodFields,
  type RankAnswer,
  type TopAnswer,
} from "./snapshot.js";
export { LiveBoard, type LiveBoardOptions, type LiveEntry, type LiveStatus, type Transport } from "./live.js";
