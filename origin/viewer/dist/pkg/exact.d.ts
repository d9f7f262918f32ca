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
 * Parses a Standings JSON answer or message with every `value` as an exact bigint, where
 * JSON.parse would round values beyond 2^53.
 */
export declare function parseExact<T = unknown>(text: string): T;
