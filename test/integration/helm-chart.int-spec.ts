// The Helm chart (charts/managed-agent-service), checked with the real helm: lint, template, and
// what the rendered manifests say against the code they deploy: each probe's path and port is one
// the app serves, every variable the apps require is set, every secret comes from the Secret by
// reference and never as a value. An integration test (not a unit one): it runs helm, which
// `npm test` installs (scripts/helm.sh, MAS_HELM), and listens on a port.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import 'reflect-metadata';
import { PATH_METADATA } from '@nestjs/common/constants.js';
import yaml from 'js-yaml';
import { ConfigError, loadConfig } from '#libs/config';
import { startMetricsServer } from '#libs/observability';
import { HealthController } from '../../apps/api/src/health/health.controller.js';
import { HealthController as ConsoleHealthController } from '../../apps/console/src/health.controller.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CHART = join(ROOT, 'charts/managed-agent-service');
const APPS = ['api', 'console', 'worker', 'worker-long', 'relay', 'projector'] as const;
/** The code each app runs: worker-long is the worker's, in another role. */
const codeOf = (app: string) => (app === 'worker-long' ? 'worker' : app);

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  command: string[];
  env: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources: { requests: { cpu: string; memory: string }; limits?: Record<string, string> };
}
interface Manifest {
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown> & { template?: { spec: { containers: Container[] } } };
  stringData?: Record<string, string>;
}

function helmPath(): string {
  const path = process.env.MAS_HELM;
  if (!path) throw new Error('MAS_HELM is not set: run the tests with `npm test` (scripts/helm.sh installs helm)');
  return path;
}

async function helm(...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(helmPath(), args, { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function render(...set: string[]): Promise<Manifest[]> {
  const text = await helm('template', 'mas', CHART, ...set);
  return (yaml.loadAll(text) as (Manifest | null)[]).filter((m): m is Manifest => m !== null);
}

const component = (m: Manifest) => m.metadata.labels?.['app.kubernetes.io/component'];
const deployment = (manifests: Manifest[], app: string): Manifest => {
  const d = manifests.find((m) => m.kind === 'Deployment' && component(m) === app);
  if (!d) throw new Error(`no Deployment for ${app}`);
  return d;
};
const container = (m: Manifest): Container => m.spec.template!.spec.containers[0]!;

/** Variables whose values are secrets: the keys the stack generates (scripts/stack/env.sh), every
 * key, password or token the configuration reads (libs/config), and the database URL (its password). */
function secretVariables(): string[] {
  const envSh = readFileSync(join(ROOT, 'scripts/stack/env.sh'), 'utf8');
  const generated = [...envSh.matchAll(/^mas_secret (\w+)/gm)].map((m) => m[1]!);
  const read = ['config.ts', 'engines.ts'].flatMap((f) =>
    [
      ...readFileSync(join(ROOT, 'libs/config/src', f), 'utf8').matchAll(
        /'([A-Z][A-Z0-9_]*_(?:KEY|KEYS|PEPPER|PASSWORD|TOKEN))'/g,
      ),
    ].map((m) => m[1]!),
  );
  return [...new Set(['DATABASE_URL', ...generated, ...read, 'KAFKA_SASL_USERNAME'])];
}

/** Variables loadConfig refuses to start without. */
function requiredVariables(): string[] {
  try {
    loadConfig({});
  } catch (e) {
    if (e instanceof ConfigError)
      return e.problems.flatMap((p) => /^(\w+) is required but not set$/.exec(p)?.[1] ?? []);
    throw e;
  }
  throw new Error('loadConfig accepted an empty environment');
}

/** A valid value for each secret, so that a pod's environment can be loaded as the app would. */
const SAMPLE_SECRETS: Record<string, string> = {
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

/** The environment the app in `c` starts with, the Secret's references resolved from `secrets`
 * (an optional key missing from it is left out, as Kubernetes leaves it out). */
function environmentOf(c: Container, secrets: Record<string, string> = CORE_SECRETS): Record<string, string> {
  return Object.fromEntries(
    c.env.flatMap((e) => {
      const v = e.value ?? secrets[e.valueFrom!.secretKeyRef!.key];
      return v === undefined ? [] : [[e.name, v]];
    }),
  );
}

/** The Secret without the managed engines' keys (the chart's defaults use none). */
const CORE_SECRETS = Object.fromEntries(Object.entries(SAMPLE_SECRETS).filter(([k]) => !/^(TEMPORAL|KAFKA)_/.test(k)));

describe('the Helm chart', () => {
  let manifests: Manifest[];
  beforeAll(async () => {
    manifests = await render();
  });

  it('passes helm lint --strict, with its defaults and with the chart creating its Secret', async () => {
    await expect(helm('lint', '--strict', CHART)).resolves.toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    const set = Object.entries(SAMPLE_SECRETS).flatMap(([k, v]) => ['--set-string', `secrets.values.${k}=${v}`]);
    await expect(helm('lint', '--strict', CHART, '--set', 'secrets.create=true', ...set)).resolves.toMatch(
      /0 chart\(s\) failed/,
    );
  });

  it('renders the apps, their disruption budgets, autoscalers for api, worker and worker-long, the api and console Services and the migrations hook', async () => {
    const kinds = (kind: string) =>
      manifests
        .filter((m) => m.kind === kind)
        .map(component)
        .sort();
    expect(kinds('Deployment')).toEqual([...APPS].sort());
    expect(kinds('PodDisruptionBudget')).toEqual([...APPS].sort());
    expect(kinds('HorizontalPodAutoscaler')).toEqual(['api', 'worker', 'worker-long']);
    expect(kinds('Service')).toEqual(['api', 'console']);
    const job = manifests.find((m) => m.kind === 'Job')!;
    expect(job.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect((job.spec.template as unknown as { spec: { containers: Container[] } }).spec.containers[0]!.command).toEqual(
      ['node', 'dist/apps/cli/src/main.js', 'migrate'],
    );
    for (const app of APPS) {
      const c = container(deployment(manifests, app));
      expect(c.command.at(-1)).toBe(`dist/apps/${codeOf(app)}/src/main.js`);
      expect(c.resources.requests.cpu).toMatch(/^\d+m$/);
      expect(c.resources.limits?.memory).toBeDefined();
    }
    // console.enabled=false leaves the console out, and only it.
    const without = await render('--set', 'console.enabled=false');
    expect(without.filter((m) => component(m) === 'console')).toEqual([]);
    expect(
      without
        .filter((m) => m.kind === 'Deployment')
        .map(component)
        .sort(),
    ).toEqual(APPS.filter((a) => a !== 'console').sort());
  });

  it('probes paths and ports that each app serves', async () => {
    // The api: the health controller's routes on PORT.
    const routes = [HealthController.prototype.healthz, HealthController.prototype.readyz].map(
      (h) => `/${Reflect.getMetadata(PATH_METADATA, h) as string}`,
    );
    const api = container(deployment(manifests, 'api'));
    const apiConfig = loadConfig(environmentOf(api));
    const httpPort = api.ports!.find((p) => p.name === 'http')!.containerPort;
    expect(httpPort).toBe(apiConfig.port);
    expect(api.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(api.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(routes).toEqual(['/healthz', '/readyz']);

    // The console: its own health controller's routes on CONSOLE_PORT, behind its Service.
    const consoleRoutes = [ConsoleHealthController.prototype.healthz, ConsoleHealthController.prototype.readyz].map(
      (h) => `/${Reflect.getMetadata(PATH_METADATA, h) as string}`,
    );
    expect(consoleRoutes).toEqual(['/healthz', '/readyz']);
    const consoleContainer = container(deployment(manifests, 'console'));
    const consoleConfig = loadConfig(environmentOf(consoleContainer));
    expect(consoleContainer.ports).toEqual([
      { name: 'http', containerPort: consoleConfig.console.port, protocol: 'TCP' },
      { name: 'metrics', containerPort: consoleConfig.metrics.consolePort, protocol: 'TCP' },
    ]);
    expect(consoleConfig.console.publicUrl).toBe('https://console.example.com');
    expect([consoleContainer.startupProbe, consoleContainer.livenessProbe].map((p) => p!.httpGet)).toEqual([
      { path: '/healthz', port: 'http' },
      { path: '/healthz', port: 'http' },
    ]);
    expect(consoleContainer.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'http' });
    const consoleService = manifests.find((m) => m.kind === 'Service' && component(m) === 'console')!;
    expect(consoleService.spec).toMatchObject({
      selector: { 'app.kubernetes.io/component': 'console' },
      ports: [{ name: 'http', targetPort: 'http' }],
    });
    expect(deployment(manifests, 'console').spec.template!.spec.containers[0]!.name).toBe('console');

    // The others: their metrics listener, on the port each reads from its environment.
    const metricsPort = {
      worker: 'workerPort',
      'worker-long': 'workerPort',
      relay: 'relayPort',
      projector: 'projectorPort',
    } as const;
    const paths = new Set<string>();
    for (const app of ['worker', 'worker-long', 'relay', 'projector'] as const) {
      const c = container(deployment(manifests, app));
      const config = loadConfig(environmentOf(c));
      expect(c.ports).toEqual([{ name: 'metrics', containerPort: config.metrics[metricsPort[app]], protocol: 'TCP' }]);
      for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
        expect(probe!.httpGet.port).toBe('metrics');
        paths.add(probe!.httpGet.path);
      }
    }
    const server = await startMetricsServer(0, { host: '127.0.0.1' });
    try {
      for (const path of paths) expect((await fetch(`http://127.0.0.1:${server.port}${path}`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  // Issue 44: /metrics was on the api's and the console's public ports, behind their Services.
  it("scrapes every app's /metrics on a metrics port of its own, bound for the pod's address, which no Service routes", async () => {
    const metricsPort = {
      api: 'apiPort',
      console: 'consolePort',
      worker: 'workerPort',
      'worker-long': 'workerPort',
      relay: 'relayPort',
      projector: 'projectorPort',
    } as const;
    for (const app of APPS) {
      const d = deployment(manifests, app);
      const c = container(d);
      const config = loadConfig(environmentOf(c));
      const port = config.metrics[metricsPort[app]];
      expect(port).toBeGreaterThan(0);
      expect(config.metrics.host).toBe('0.0.0.0');
      expect(c.ports).toContainEqual({ name: 'metrics', containerPort: port, protocol: 'TCP' });
      const annotations = (d.spec.template as unknown as { metadata: { annotations: Record<string, string> } }).metadata
        .annotations;
      expect(annotations).toMatchObject({ 'prometheus.io/port': String(port), 'prometheus.io/path': '/metrics' });
      if (app === 'api' || app === 'console') expect(port).not.toBe(app === 'api' ? config.port : config.console.port);
    }
    for (const service of manifests.filter((m) => m.kind === 'Service'))
      expect(service.spec.ports).toEqual([expect.objectContaining({ name: 'http', targetPort: 'http' })]);
  });

  it('runs the bulkhead: worker-long polls the queue every app names for long activities, and without it no app names one', async () => {
    const queues = APPS.map((app) => loadConfig(environmentOf(container(deployment(manifests, app)))).temporal);
    expect(new Set(queues.map((t) => t.longActivityTaskQueue))).toEqual(new Set(['mas-agent-long']));
    expect(queues.map((t) => t.workerRole)).toEqual(
      APPS.map((app) => (app === 'worker-long' ? 'long-activities' : 'workflows')),
    );
    const named = await render('--set', 'config.taskQueue=agents', '--set', 'workerLong.taskQueue=agents-tools');
    expect(loadConfig(environmentOf(container(deployment(named, 'api')))).temporal.longActivityTaskQueue).toBe(
      'agents-tools',
    );
    const without = await render('--set', 'workerLong.enabled=false');
    expect(without.filter((m) => component(m) === 'worker-long')).toEqual([]);
    for (const m of without.filter((d) => d.kind === 'Deployment'))
      expect(loadConfig(environmentOf(container(m))).temporal.longActivityTaskQueue).toBeUndefined();
  });

  it('gives every app and the migrations every variable the apps require, each secret by reference to the Secret', () => {
    const required = requiredVariables();
    const secrets = secretVariables();
    expect(required).toEqual(
      expect.arrayContaining(['DATABASE_URL', 'MAS_MASTER_KEY', 'MAS_API_KEY_PEPPER', 'MAS_PAYLOAD_KEYS']),
    );
    expect(secrets).toEqual(
      expect.arrayContaining(['MAS_CODEC_TOKEN', 'MAS_PAYLOAD_KEY_CURRENT', 'TEMPORAL_API_KEY', 'KAFKA_SASL_PASSWORD']),
    );
    const pods = [
      ...APPS.map((app) => container(deployment(manifests, app))),
      (manifests.find((m) => m.kind === 'Job')!.spec.template as unknown as { spec: { containers: Container[] } }).spec
        .containers[0]!,
    ];
    for (const c of pods) {
      const names = c.env.map((e) => e.name);
      expect(names).toEqual(expect.arrayContaining([...required, ...secrets]));
      expect(new Set(names).size).toBe(names.length);
      for (const name of secrets) {
        const v = c.env.find((e) => e.name === name)!;
        expect(v.value).toBeUndefined();
        expect(v.valueFrom?.secretKeyRef).toMatchObject({ name: 'mas-managed-agent-service-secrets', key: name });
        expect(v.valueFrom!.secretKeyRef!.optional ?? false).toBe(!required.includes(name));
      }
      expect(() => loadConfig(environmentOf(c))).not.toThrow();
    }
  });

  it('holds no secret value: none in values.yaml, and one given at install time only in the Secret', async () => {
    const values = yaml.load(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
      secrets: { values: object; create: boolean };
    };
    expect(values.secrets).toMatchObject({ create: false, values: {} });
    expect(manifests.filter((m) => m.kind === 'Secret')).toEqual([]);

    const set = Object.entries(SAMPLE_SECRETS).flatMap(([k, v]) => ['--set-string', `secrets.values.${k}=${v}`]);
    const withSecret = await render('--set', 'secrets.create=true', ...set);
    const secret = withSecret.filter((m) => m.kind === 'Secret');
    expect(secret).toHaveLength(1);
    expect(secret[0]!.stringData).toEqual(SAMPLE_SECRETS);
    const elsewhere = JSON.stringify(withSecret.filter((m) => m.kind !== 'Secret'));
    for (const [name, value] of Object.entries(SAMPLE_SECRETS))
      expect({ name, found: elsewhere.includes(value) }).toEqual({ name, found: false });

    // A required key left out is refused at render time, not at the pods' start.
    await expect(
      render(
        '--set',
        'secrets.create=true',
        '--set-string',
        `secrets.values.MAS_MASTER_KEY=${SAMPLE_SECRETS.MAS_MASTER_KEY}`,
      ),
    ).rejects.toThrow(/secrets.values.DATABASE_URL is required/);
  });

  it("mounts PostgreSQL's CA for sslmode=verify-full in every pod when one is named", async () => {
    const withTls = await render('--set', 'postgres.tls.caSecret=pg-ca');
    const pods = withTls.filter((m) => m.kind === 'Deployment' || m.kind === 'Job');
    expect(pods).toHaveLength(APPS.length + 1);
    for (const m of pods) {
      const spec = m.spec.template!.spec as unknown as {
        containers: (Container & { volumeMounts: unknown[] })[];
        volumes: unknown[];
      };
      expect(spec.volumes).toEqual([{ name: 'postgres-tls', secret: { secretName: 'pg-ca' } }]);
      expect(spec.containers[0]!.volumeMounts).toEqual([
        { name: 'postgres-tls', mountPath: '/etc/mas/tls/postgres', readOnly: true },
      ]);
    }
  });

  it("connects to managed engines as the apps read it: Temporal's TLS and API key, Kafka's SSL and SASL, each file from a mounted Secret", async () => {
    const rendered = await render(
      '--set',
      'temporal.tls.enabled=true',
      '--set',
      'temporal.tls.caSecret=temporal-ca',
      '--set',
      'temporal.tls.clientSecret=temporal-client',
      '--set',
      'temporal.tls.serverName=frontend.temporal',
      '--set',
      'kafka.ssl.enabled=true',
      '--set',
      'kafka.ssl.caSecret=kafka-ca',
      '--set',
      'kafka.sasl.mechanism=scram-sha-512',
    );
    for (const app of APPS) {
      const d = deployment(rendered, app);
      const c = container(d);
      const spec = d.spec.template!.spec as unknown as {
        volumes: { name: string; secret: { secretName: string } }[];
        containers: { volumeMounts: { name: string; mountPath: string }[] }[];
      };
      const secretOfPath = (path: string) => {
        const mount = spec.containers[0]!.volumeMounts.find((m) => path.startsWith(`${m.mountPath}/`));
        return spec.volumes.find((v) => v.name === mount?.name)?.secret.secretName;
      };
      // The Secret without the API key: mTLS and an API key are two ways to authenticate.
      const { TEMPORAL_API_KEY: _, ...secrets } = SAMPLE_SECRETS;
      const { engines } = loadConfig(environmentOf(c, secrets));
      expect(engines.temporal).toMatchObject({ tls: true, serverName: 'frontend.temporal' });
      expect(
        [engines.temporal.caFile, engines.temporal.clientCertFile, engines.temporal.clientKeyFile].map((f) =>
          secretOfPath(f!),
        ),
      ).toEqual(['temporal-ca', 'temporal-client', 'temporal-client']);
      expect(engines.kafka).toMatchObject({
        ssl: true,
        sasl: { mechanism: 'scram-sha-512', username: 'kafka-user-of-mas', password: 'kafka-password' },
      });
      expect(secretOfPath(engines.kafka.caFile!)).toBe('kafka-ca');
    }
    // Temporal Cloud: TLS against public roots and the API key from the Secret.
    const cloud = await render(
      '--set',
      'temporal.tls.enabled=true',
      '--set',
      'temporal.address=acme.a1b2c.tmprl.cloud:7233',
    );
    const { engines } = loadConfig(
      environmentOf(container(deployment(cloud, 'worker')), {
        ...CORE_SECRETS,
        TEMPORAL_API_KEY: SAMPLE_SECRETS.TEMPORAL_API_KEY!,
      }),
    );
    expect(engines.temporal).toMatchObject({ tls: true, apiKey: SAMPLE_SECRETS.TEMPORAL_API_KEY, caFile: undefined });
  });
});
