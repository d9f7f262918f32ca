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
// Each JSON string token (a key when a colon follows it), or a `"value"` key with an integer
// (one that ends there: `1.5` and `1e3` stay numbers). Matching whole strings first means
// nothing inside a string is ever taken for a field.
const TOKENS = /"value"\s*:\s*(-?[0-9]+)(?=\s*[,}\]])|"(?:[^"\\]|\\.)*"(\s*:)?/g;
/**
 * Parses a Standings JSON answer or message with every integer `value` as an exact bigint, where
 * JSON.parse would round values beyond 2^53. Anything else is as JSON.parse reads it, entry
 * metadata included (whose own `value` fields, at any depth, are read the same way: an integer
 * as a bigint, a string or a fraction as it is).
 */
export function parseExact(text) {
    // Integers of `value` fields become strings marked "i", and every string value is marked
    // "s", so the reviver tells them apart whatever a string holds.
    const marked = text.replace(TOKENS, (token, digits, colon) => {
        if (digits !== undefined)
            return `"value":"i${digits}"`;
        return colon !== undefined ? token : `"s${token.slice(1)}`;
    });
    return JSON.parse(marked, (key, v) => {
        if (typeof v !== "string")
            return v;
        return key === "value" && v.startsWith("i") ? BigInt(v.slice(1)) : v.slice(1);
    });
}
/**
 * JSON text of a value `parseExact` read, on one line and without whitespace: bigints (its
 * `value` fields, wherever they are) print as the integers they are, and a `value` field that
 * was a Number (`1e3`, `2.0` in the text) as one that `parseExact` keeps a Number, so reading the
 * text again gives the same value back.
 */
export function stringifyExact(value) {
    return exactText(value, false);
}
function exactText(value, valueField) {
    if (typeof value === "bigint")
        return value.toString();
    if (Array.isArray(value))
        return `[${value.map((item) => exactText(item, false)).join(",")}]`;
    if (typeof value === "object" && value !== null) {
        return `{${Object.entries(value)
            .map(([key, field]) => `${JSON.stringify(key)}:${exactText(field, key === "value")}`)
            .join(",")}}`;
    }
    const text = JSON.stringify(value) ?? "null";
    // parseExact takes a `value` field's integer digits for a bigint; a fraction keeps it a Number.
    return valueField && typeof value === "number" && /^-?[0-9]+$/.test(text) ? `${text}.0` : text;
}
