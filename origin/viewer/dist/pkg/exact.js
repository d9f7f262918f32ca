import { parseTime } from "./standings_wasm.js";
// Exact integers across JSON and JavaScript: scores are i64 on the wire, and a JavaScript
// Number holds only 53 bits, so every value is read and passed as a bigint.
/** The least and greatest values the service stores (i64). */
export const I64_MIN = -(2n ** 63n);
export const I64_MAX = 2n ** 63n - 1n;
/** A value as the i64 it stands for; throws a TypeError naming `what` when it is not one. */
export function toI64(value, what) {
    let exact;
    if (typeof value === "bigint") {
        exact = value;
    }
    else if (typeof value === "string") {
        if (!/^-?[0-9]+$/.test(value)) {
            throw new TypeError(`${what}: ${JSON.stringify(value)} is not a decimal integer`);
        }
        exact = BigInt(value);
    }
    else if (typeof value === "number") {
        if (!Number.isSafeInteger(value)) {
            throw new TypeError(`${what}: ${value} is not a safe integer; pass values beyond 2^53 as a bigint or a decimal string`);
        }
        exact = BigInt(value);
    }
    else {
        throw new TypeError(`${what}: expected a bigint, a decimal string or an integer, got ${typeof value}`);
    }
    if (exact < I64_MIN || exact > I64_MAX) {
        throw new RangeError(`${what}: ${exact} is outside the signed 64-bit range the service stores`);
    }
    return exact;
}
/** An instant as ms since the epoch; throws a TypeError naming `what` when it is not one. */
export function toMs(instant, what) {
    if (instant instanceof Date) {
        const ms = instant.getTime();
        if (Number.isNaN(ms))
            throw new TypeError(`${what}: an invalid Date`);
        return ms;
    }
    if (typeof instant === "number") {
        if (!Number.isSafeInteger(instant))
            throw new TypeError(`${what}: ${instant} is not whole ms since the epoch`);
        return instant;
    }
    if (typeof instant === "string") {
        // The core's parser, so a time reads here as the service reads it (an offset is required).
        const ms = parseTime(instant);
        if (ms === undefined) {
            throw new TypeError(`${what}: ${JSON.stringify(instant)} is not an RFC 3339 time with an offset (years 0000 to 9999)`);
        }
        return ms;
    }
    throw new TypeError(`${what}: expected an RFC 3339 string, ms since the epoch or a Date`);
}
// A `"value":` key outside a string: inside one, its quotes would be escaped as \".
const VALUE_FIELD = /"value":(-?[0-9]+)/g;
/**
 * Parses a Standings JSON answer or message with every `value` as an exact bigint, where
 * JSON.parse would round values beyond 2^53.
 */
export function parseExact(text) {
    const quoted = text.replace(VALUE_FIELD, '"value":"$1"');
    return JSON.parse(quoted, (key, v) => (key === "value" && typeof v === "string" ? BigInt(v) : v));
}
