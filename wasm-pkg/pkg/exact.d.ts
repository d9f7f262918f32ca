/** The least and greatest values the service stores (i64). */
export declare const I64_MIN: bigint;
export declare const I64_MAX: bigint;
/** A score as callers may give it: a bigint, a decimal string, or a safe-integer Number. */
export type ExactValue = bigint | string | number;
/** An instant as callers may give it: RFC 3339 with an offset, ms since the epoch, or a Date. */
export type Instant = string | number | Date;
/** A value as the i64 it stands for; throws a TypeError naming `what` when it is not one. */
export declare function toI64(value: ExactValue, what: string): bigint;
/** An instant as ms since the epoch; throws a TypeError naming `what` when it is not one. */
export declare function toMs(instant: Instant, what: string): number;
/**
 * Parses a Standings JSON answer or message with every integer `value` as an exact bigint, where
 * JSON.parse would round values beyond 2^53. Anything else is as JSON.parse reads it, entry
 * metadata included (whose own `value` fields, at any depth, are read the same way: an integer
 * as a bigint, a string or a fraction as it is).
 */
export declare function parseExact<T = unknown>(text: string): T;
/**
 * JSON text of a value `parseExact` read, on one line and without whitespace: bigints (its
 * `value` fields, wherever they are) print as the integers they are, and a `value` field that
 * was a Number (`1e3`, `2.0` in the text) as one that `parseExact` keeps a Number, so reading the
 * text again gives the same value back.
 */
export declare function stringifyExact(value: unknown): string;
