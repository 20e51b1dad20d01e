/** Types of app-process.mjs, for the TypeScript tests that start the apps. */
export function appProcess(
  app: string,
  options?: { root?: string; preload?: string[] },
): { command: string; args: string[]; env: Record<string, string> };
