// Preloaded into every app (`node --import`, see scripts/app-process.mjs): stack traces point at
// the TypeScript sources of the service's own code, while the source maps of node_modules are not
// read. `--enable-source-maps` read them all (typeorm, zod and OpenTelemetry ship maps with their
// sources inlined), which kept about 37 MB of strings in the worker's heap (issue 16).
import module from 'node:module';

const setSourceMapsSupport = (
  module as unknown as {
    setSourceMapsSupport?: (enabled: boolean, options: { nodeModules: boolean; generatedCode: boolean }) => void;
  }
).setSourceMapsSupport;
setSourceMapsSupport?.(true, { nodeModules: false, generatedCode: false });
