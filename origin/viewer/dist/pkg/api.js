// The package's API, the same from both entries (index.ts for browsers, node.ts for Node).
export { I64_MAX, I64_MIN, parseExact, stringifyExact } from "./exact.js";
export { compare, rankFriends, } from "./order.js";
export { SnapshotReader, } from "./snapshot.js";
export { LiveBoard } from "./live.js";
