// js-yaml 4 is in the lockfile through ESLint (@eslint/eslintrc) and ships no types; the Helm
// chart's test reads rendered manifests with these two functions only.
declare module 'js-yaml' {
  export function load(text: string): unknown;
  export function loadAll(text: string): unknown[];
  const yaml: { load: typeof load; loadAll: typeof loadAll };
  export default yaml;
}
