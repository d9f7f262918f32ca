// The one Node API the Node entry uses, declared here instead of pulling in @types/node.
declare module "node:fs" {
  export function readFileSync(path: URL): Uint8Array;
}
