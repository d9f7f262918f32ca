// The package's browser entry: it instantiates the WebAssembly module once, at import (which is
// why package.json lists this file under sideEffects), then exports the API.
import init from "./standings_wasm.js";
await init({ module_or_path: new URL("./standings_wasm_bg.wasm", import.meta.url) });
export * from "./api.js";
