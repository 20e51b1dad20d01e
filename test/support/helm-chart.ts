// The Helm chart as its integration tests see it (test/integration/helm-chart*.int-spec.ts): the
// real helm (scripts/helm.sh, MAS_HELM) rendering charts/managed-agent-service, and the rendered
// objects checked against Kubernetes' own OpenAPI schemas and the Temporal Worker Controller's CRDs
// (scripts/k8s-schemas.sh), with unknown fields refused as `kubectl apply` refuses them.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Ajv, type ValidateFunction } from 'ajv';
import yaml from 'js-yaml';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CHART = join(ROOT, 'charts/managed-agent-service');
const run = promisify(execFile);

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
export interface Probe {
  httpGet: { path: string; port: string | number };
}
export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: string };
  procMount?: string;
  seLinuxOptions?: { type?: string };
  appArmorProfile?: { type: string };
  sysctls?: { name: string }[];
}
export interface Container {
  name: string;
  image: string;
  command: string[];
  env: EnvVar[];
  ports?: { name: string; containerPort: number; hostPort?: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources: { requests: { cpu: string; memory: string }; limits?: Record<string, string> };
  securityContext?: SecurityContext;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: ({ name: string } & Record<string, unknown>)[];
  securityContext?: SecurityContext;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
}
export interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown> & { template?: PodTemplate };
  stringData?: Record<string, string>;
}

function helmPath(): string {
  const path = process.env.MAS_HELM;
  if (!path) throw new Error('MAS_HELM is not set: run the tests with `npm test` (scripts/helm.sh installs helm)');
  return path;
}

export async function helm(...args: string[]): Promise<string> {
  const { stdout } = await run(helmPath(), args, { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

export function parseManifests(text: string): Manifest[] {
  return (yaml.loadAll(text) as (Manifest | null)[]).filter((m): m is Manifest => m !== null);
}

/** `helm template mas <chart> ...args`: the release's objects, hooks included. */
export async function render(...args: string[]): Promise<Manifest[]> {
  return parseManifests(await helm('template', 'mas', CHART, ...args));
}

/** A revision of a release: `values` as `helm get values` gives them (what `helm upgrade
 * --reuse-values` starts from), then `set` on top; `upgrade` renders it as an upgrade would. */
export async function renderRevision(
  values: object,
  options: { upgrade: boolean; namespace?: string },
): Promise<Manifest[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mas-chart-'));
  try {
    const file = join(dir, 'values.yaml');
    writeFileSync(file, yaml.dump(values));
    return await render(
      '-f',
      file,
      '--namespace',
      options.namespace ?? 'agents',
      ...(options.upgrade ? ['--is-upgrade'] : []),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A valid value for each secret, so that a pod's environment can be loaded as the app would. */
export const SAMPLE_SECRETS: Readonly<Record<string, string>> = {
  DATABASE_URL: 'postgres://mas:pw@postgres:5432/mas?sslmode=verify-full&sslrootcert=/etc/mas/tls/postgres/ca.crt',
  MAS_MASTER_KEY: Buffer.alloc(32, 1).toString('base64'),
  MAS_API_KEY_PEPPER: Buffer.alloc(32, 2).toString('base64'),
  MAS_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 3).toString('base64')}`,
  MAS_PAYLOAD_KEY_CURRENT: 'k1',
  MAS_CODEC_TOKEN: 'c'.repeat(43),
  TEMPORAL_API_KEY: 'tcld-ak-0123456789abcdef',
  KAFKA_SASL_USERNAME: 'kafka-user-of-mas',
  KAFKA_SASL_PASSWORD: 'kafka-password',
};

/** The Secret without the managed engines' keys (the chart's defaults use none). */
export const CORE_SECRETS: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(SAMPLE_SECRETS).filter(([k]) => !/^(TEMPORAL|KAFKA)_/.test(k)),
);

/** The environment the app in `c` starts with, the Secret's references resolved from `secrets`
 * (an optional key missing from it is left out, as Kubernetes leaves it out). */
export function environmentOf(
  c: Container,
  secrets: Readonly<Record<string, string>> = CORE_SECRETS,
): Record<string, string> {
  return Object.fromEntries(
    c.env.flatMap((e) => {
      const v = e.value ?? secrets[e.valueFrom!.secretKeyRef!.key];
      return v === undefined ? [] : [[e.name, v]];
    }),
  );
}

export const component = (m: Manifest) => m.metadata.labels?.['app.kubernetes.io/component'];
export const isHook = (m: Manifest) => m.metadata.annotations?.['helm.sh/hook'] !== undefined;

/** Every pod the release makes, with the app it runs: Deployments, hook Jobs, and the worker
 * controller's WorkerDeployment template. */
export function pods(manifests: Manifest[]): { owner: Manifest; app: string; template: PodTemplate }[] {
  return manifests
    .filter((m) => ['Deployment', 'Job', 'WorkerDeployment', 'TemporalWorkerDeployment'].includes(m.kind))
    .map((m) => ({ owner: m, app: component(m)!, template: m.spec.template! }));
}

type JsonSchema = Record<string, unknown>;

/** What `kubectl apply` refuses that a plain JSON schema of Kubernetes' OpenAPI does not: a field
 * the type does not have (the API server's strict field validation). Closes every object schema
 * that lists its properties, but those Kubernetes marks as keeping unknown fields. */
function closeObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (!schema || typeof schema !== 'object') return schema;
  const s = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'enum' ? v : closeObjects(v)]));
  if (s.properties && s.additionalProperties === undefined && !s['x-kubernetes-preserve-unknown-fields'])
    s.additionalProperties = false;
  return s;
}

export interface SchemaCheck {
  /** The problems of one object against its type's schema; [] when it would be accepted. */
  (m: Manifest): string[];
  /** The kinds it has a schema for, as apiVersion/kind. */
  readonly kinds: ReadonlySet<string>;
}

/** A validator of rendered objects: Kubernetes v1.34's OpenAPI v3 documents, the Temporal Worker
 * Controller's and the Gateway API's CRDs (scripts/k8s-schemas.sh downloads them as Go modules). CEL rules
 * (x-kubernetes-validations) and admission (Pod Security: checked on its own) are not in it. */
export async function kubernetesSchemas(): Promise<SchemaCheck> {
  const { stdout } = await run('bash', [join(ROOT, 'scripts/k8s-schemas.sh')], { cwd: ROOT, timeout: 600_000 });
  const [openapi, ...crdDirs] = stdout.trim().split('\n');
  const definitions: Record<string, JsonSchema> = {};
  const byKind = new Map<string, string>();
  for (const file of readdirSync(openapi!).filter((f) => /^apis?__.*v\d+(alpha\d+|beta\d+)?_openapi\.json$/.test(f))) {
    const doc = JSON.parse(readFileSync(join(openapi!, file), 'utf8')) as {
      components: { schemas: Record<string, JsonSchema> };
    };
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      definitions[name] = schema;
      const gvk = schema['x-kubernetes-group-version-kind'] as { group: string; version: string; kind: string }[];
      if (gvk?.length === 1 && !name.startsWith('io.k8s.apimachinery')) {
        const { group, version, kind } = gvk[0]!;
        byKind.set(`${group ? `${group}/` : ''}${version}/${kind}`, name);
      }
    }
  }
  type Crd = {
    kind: string;
    spec: {
      group: string;
      names: { kind: string };
      versions: { name: string; schema: { openAPIV3Schema: JsonSchema } }[];
    };
  };
  const crds = crdDirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => yaml.loadAll(readFileSync(join(dir, f), 'utf8')) as (Crd | null)[])
      .filter((d): d is Crd => d?.kind === 'CustomResourceDefinition'),
  );
  for (const crd of crds) {
    for (const v of crd.spec.versions) {
      const name = `crd.${crd.spec.group}.${v.name}.${crd.spec.names.kind}`;
      const schema = structuredClone(v.schema.openAPIV3Schema);
      // An object's own metadata is the API server's ObjectMeta, not the CRD's.
      (schema.properties as Record<string, JsonSchema>).metadata = {
        $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
      };
      definitions[name] = schema;
      byKind.set(`${crd.spec.group}/${v.name}/${crd.spec.names.kind}`, name);
    }
  }
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  const root = closeObjects({ components: { schemas: definitions } }) as JsonSchema;
  ajv.addSchema({ $id: 'k8s', ...root });
  const compiled = new Map<string, ValidateFunction>();
  const check = ((m: Manifest) => {
    const key = `${m.apiVersion}/${m.kind}`;
    const name = byKind.get(key);
    if (!name) return [`no schema for ${key}`];
    let validate = compiled.get(name);
    if (!validate) {
      validate = ajv.compile({ $ref: `k8s#/components/schemas/${name}` });
      compiled.set(name, validate);
    }
    const what = `${m.kind} ${m.metadata.name}`;
    return validate(m)
      ? []
      : (validate.errors ?? []).map((e) => `${what}${e.instancePath}: ${e.message} ${JSON.stringify(e.params)}`);
  }) as SchemaCheck;
  Object.defineProperty(check, 'kinds', { value: new Set(byKind.keys()) });
  return check;
}
