// The package graph, checked by ESLint (rule `mas/package-graph`): apps import libs only as
// `#libs/<lib>`, never another app's or a lib's files by path; a lib imports only the libs listed
// for it below; test support code only from tests. The lib graph is checked acyclic, and every
// folder of libs/ must be listed, when this file loads: a new edge or lib is a decision made here.
import { readdirSync } from 'node:fs';
import path from 'node:path';

/** Which libs each lib may import. */
export const LIB_DEPENDENCIES = {
  contracts: [],
  health: [],
  egress: [],
  'http-edge': [],
  config: ['contracts', 'egress'],
  mail: ['config'],
  observability: ['config'],
  llm: ['contracts', 'egress', 'observability'],
  kafka: ['config', 'health'],
  persistence: ['config', 'contracts', 'health'],
  temporal: ['config', 'contracts', 'health', 'observability'],
  events: ['contracts', 'health', 'kafka', 'observability', 'persistence'],
  metering: ['contracts', 'events', 'observability', 'persistence'],
  streaming: ['config', 'contracts', 'kafka', 'observability', 'persistence'],
  accounts: ['config', 'contracts', 'events', 'llm', 'mail', 'metering', 'persistence'],
  resources: ['config', 'contracts', 'persistence'],
  'read-models': ['contracts', 'events', 'kafka', 'observability', 'persistence'],
  tools: ['contracts', 'egress'],
  webhooks: ['accounts', 'config', 'contracts', 'egress', 'events', 'persistence'],
};

const root = path.resolve(import.meta.dirname, '../..');

/** A cycle in `graph` as a list of names (first repeated last), or undefined. */
export function findCycle(graph) {
  const state = new Map();
  const visit = (name, trail) => {
    if (state.get(name) === 'done') return undefined;
    if (state.get(name) === 'open') return [...trail.slice(trail.indexOf(name)), name];
    state.set(name, 'open');
    for (const next of graph[name] ?? []) {
      const cycle = visit(next, [...trail, name]);
      if (cycle) return cycle;
    }
    state.set(name, 'done');
    return undefined;
  };
  for (const name of Object.keys(graph)) {
    const cycle = visit(name, []);
    if (cycle) return cycle;
  }
  return undefined;
}

const cycle = findCycle(LIB_DEPENDENCIES);
if (cycle) throw new Error(`scripts/lint/package-graph.mjs: the libs' graph has a cycle: ${cycle.join(' -> ')}`);
const libs = readdirSync(path.join(root, 'libs'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
const unlisted = libs.filter((l) => !(l in LIB_DEPENDENCIES));
const missing = Object.keys(LIB_DEPENDENCIES).filter((l) => !libs.includes(l));
if (unlisted.length || missing.length) {
  throw new Error(
    `scripts/lint/package-graph.mjs: LIB_DEPENDENCIES must list exactly the folders of libs/ (unlisted: ${unlisted.join(', ') || 'none'}; no such lib: ${missing.join(', ') || 'none'})`,
  );
}
for (const [lib, deps] of Object.entries(LIB_DEPENDENCIES)) {
  const unknown = deps.filter((d) => !(d in LIB_DEPENDENCIES));
  if (unknown.length)
    throw new Error(`scripts/lint/package-graph.mjs: ${lib} lists unknown libs: ${unknown.join(', ')}`);
}

/** The package a file belongs to: `apps/api`, `libs/events`, `workflows`, `test`, or undefined. */
function packageOf(file) {
  const [top, name] = path.relative(root, file).split(path.sep);
  if (top === 'apps' || top === 'libs') return name ? `${top}/${name}` : undefined;
  if (top === 'workflows' || top === 'test') return top;
  return undefined;
}

const isTestFile = (file) => /\.(spec|int-spec|e2e-spec|workflow-spec)\.ts$/.test(file) || packageOf(file) === 'test';

const packageGraph = {
  meta: {
    type: 'problem',
    docs: { description: 'the package graph: no app imports another app, libs import only the libs listed for them' },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const own = packageOf(file);
    if (!own || own === 'test') return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string') return;
      if (spec.startsWith('#libs/')) {
        const lib = spec.slice('#libs/'.length);
        if (own.startsWith('libs/')) {
          const self = own.slice('libs/'.length);
          if (lib !== self && !LIB_DEPENDENCIES[self]?.includes(lib)) {
            context.report({
              node,
              message: `libs/${self} may not import #libs/${lib}: its libs are listed in LIB_DEPENDENCIES (scripts/lint/package-graph.mjs), which must stay acyclic.`,
            });
          }
        }
        return;
      }
      if (!spec.startsWith('.')) return;
      const target = packageOf(path.resolve(path.dirname(file), spec));
      if (!target || target === own) return;
      if (target === 'test') {
        if (!isTestFile(file))
          context.report({ node, message: `${own} imports test support code (${spec}) outside a test.` });
        return;
      }
      if (isTestFile(file) && own === 'workflows' && target === 'apps/worker') return; // the worker's bundle options, in workflow tests
      context.report({
        node,
        message: `${own} reaches into ${target} by path (${spec}): an app imports libs as #libs/<lib> and never another app; shared code belongs in a lib.`,
      });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
    };
  },
};

/** The ESLint plugin holding the rule. */
export const masPlugin = { rules: { 'package-graph': packageGraph } };
