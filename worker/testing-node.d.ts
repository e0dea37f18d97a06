// The Node built-ins ./testing.mjs calls, for `tsc -p worker/tsconfig.testing.json`
// alone (this repository has no @types/node): Node's own signatures
// (nodejs.org/api fs.html, url.html, the WHATWG URL), each narrowed to the
// overload testing.mjs uses. The check of testing.mjs is as good as this
// subset. Not shipped (package.json's files take worker/*.d.mts only).
interface ImportMeta {
  readonly url: string;
}

declare class URL {
  constructor(input: string, base?: string | URL);
  readonly href: string;
}

declare module "node:fs" {
  export function readFileSync(path: string, encoding: "utf8"): string;
  export function readdirSync(path: string, options: { recursive: true }): string[];
  export function readdirSync(path: string): string[];
}

declare module "node:url" {
  export function fileURLToPath(url: string | URL): string;
}
