/* tslint:disable */
/* eslint-disable */
export const memory: WebAssembly.Memory;
export const __wbg_snapshotview_free: (a: number, b: number) => void;
export const checkPlayerId: (a: number, b: number, c: number) => void;
export const compareStandings: (a: number, b: number, c: number, d: bigint, e: bigint, f: number, g: number, h: bigint, i: bigint, j: number, k: number) => void;
export const parseTime: (a: number, b: number, c: number) => void;
export const rankOrder: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number) => void;
export const rankOrderMs: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number) => void;
export const snapshotview_addPart: (a: number, b: number, c: number, d: number, e: number, f: number) => void;
export const snapshotview_boardVersion: (a: number) => number;
export const snapshotview_nearby: (a: number, b: number, c: number, d: number, e: number) => void;
export const snapshotview_needed: (a: number, b: number) => void;
export const snapshotview_new: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number, j: number, k: number, l: number, m: number, n: number, o: number, p: number, q: number, r: number, s: number, t: number, u: number) => void;
export const snapshotview_rank: (a: number, b: number, c: number, d: number) => void;
export const snapshotview_top: (a: number, b: number, c: number, d: number, e: number) => void;
export const snapshotview_totalPlayers: (a: number) => number;
export const __wbindgen_externrefs: WebAssembly.Table;
export const __wbindgen_add_to_stack_pointer: (a: number) => number;
export const __wbindgen_export: (a: number, b: number) => number;
export const __wbindgen_export2: (a: number, b: number, c: number, d: number) => number;
export const __wbindgen_export3: (a: number, b: number, c: number) => void;
export const __wbindgen_export4: (a: number) => void;
export const __wbindgen_export5: (a: number, b: number) => void;
export const __wbindgen_start: () => void;
