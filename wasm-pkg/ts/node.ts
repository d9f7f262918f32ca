// The package's Node entry: the same API, with the WebAssembly module read from the package's
// folder, since Node's fetch does not read file: URLs.
import { readFileSync } from "node:fs";
import { initSync } from "./standings_wasm.js";

initSync({ module: readFileSync(new URL("./standings_wasm_bg.wasm", import.meta.url)) });

export * from "./api.js";
