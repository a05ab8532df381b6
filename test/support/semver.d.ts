// The one function of `semver` (a dependency of npm's own tools, without its types here) that the
// engines spec uses.
declare module 'semver' {
  export function satisfies(version: string, range: string): boolean;
}
