// The Helm chart (charts/managed-agent-service), checked with the real helm: lint, template, and
// what the rendered manifests say against the code they deploy: each probe's path and port is one
// the app serves, every variable the apps require is set, every secret comes from the Secret by
// reference and never as a value. An integration test (not a unit one): it runs helm, which
// `npm test` installs (scripts/helm.sh, MAS_HELM), and listens on a port.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import 'reflect-metadata';
import { PATH_METADATA } from '@nestjs/common/constants.js';
import yaml from 'js-yaml';
import { ConfigError, loadConfig } from '#libs/config';
import { startMetricsServer } from '#libs/observability';
import { HealthController } from '../../apps/api/src/health/health.controller.js';
import { HealthController as ConsoleHealthController } from '../../apps/console/src/health.controller.js';
import {
  CHART,
  component,
  CORE_SECRETS,
  environmentOf,
  helm,
  pods,
  render,
  ROOT,
  SAMPLE_SECRETS,
  type Container,
  type Manifest,
} from '../support/helm-chart.js';

const APPS = ['api', 'api-streams', 'console', 'worker', 'worker-long', 'relay', 'projector'] as const;
/** The code each app runs: worker-long is the worker's, in another role; api-streams the api's. */
const codeOf = (app: string) => ({ 'worker-long': 'worker', 'api-streams': 'api' })[app] ?? app;

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
    await expect(helm('lint', '--strict', CHART, '--set', 'workerController.enabled=true')).resolves.toMatch(
      /0 chart\(s\) failed/,
    );
  });

  it('renders the apps, their disruption budgets, autoscalers for api, api-streams, worker and worker-long, the api, api-streams and console Services and the migrations and promote hooks', async () => {
    const kinds = (kind: string) =>
      manifests
        .filter((m) => m.kind === kind)
        .map(component)
        .sort();
    expect(kinds('Deployment')).toEqual([...APPS].sort());
    expect(kinds('PodDisruptionBudget')).toEqual([...APPS].sort());
    expect(kinds('HorizontalPodAutoscaler')).toEqual(['api', 'api-streams', 'worker', 'worker-long']);
    expect(kinds('Service')).toEqual(['api', 'api-streams', 'console']);
    expect(kinds('Job')).toEqual(['migrate', 'promote']);
    const job = manifests.find((m) => m.kind === 'Job' && component(m) === 'migrate')!;
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
      'api-streams': 'apiPort',
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
      if (app !== 'console' && app.startsWith('api')) expect(port).not.toBe(config.port);
      if (app === 'console') expect(port).not.toBe(config.console.port);
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
    // Which secret each app gets is helm-chart-hardening.int-spec.ts's table; here: every one it
    // gets, by reference to its app's Secret, required as the apps require it.
    const all = pods(manifests);
    expect(all.map((p) => p.app).sort()).toEqual([...APPS, 'migrate', 'promote'].sort());
    for (const { template } of all) {
      const c = template.spec.containers[0]!;
      const names = c.env.map((e) => e.name);
      expect(names).toEqual(expect.arrayContaining(required));
      expect(new Set(names).size).toBe(names.length);
      for (const name of secrets.filter((n) => names.includes(n))) {
        const v = c.env.find((e) => e.name === name)!;
        expect(v.value).toBeUndefined();
        expect(v.valueFrom?.secretKeyRef).toMatchObject({
          name: expect.stringMatching(/^mas-managed-agent-service-[a-z-]+-secrets$/),
          key: name,
        });
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
    // One Secret per app: together they hold every value given, each only where it is read.
    const secret = withSecret.filter((m) => m.kind === 'Secret');
    expect(secret).toHaveLength(7);
    expect(Object.assign({}, ...secret.map((s) => s.stringData))).toEqual(SAMPLE_SECRETS);
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
    const all = pods(withTls);
    expect(all).toHaveLength(APPS.length + 2);
    for (const { template } of all) {
      // Beside /tmp, the one writable directory of a read-only root filesystem.
      expect(template.spec.volumes).toEqual([
        { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } },
        { name: 'postgres-tls', secret: { secretName: 'pg-ca' } },
      ]);
      expect(template.spec.containers[0]!.volumeMounts).toEqual([
        { name: 'tmp', mountPath: '/tmp' },
        { name: 'postgres-tls', mountPath: '/etc/mas/tls/postgres', readOnly: true },
      ]);
    }
  });

  it("connects to managed engines as the apps read it: Temporal's TLS and API key, Kafka's SSL and SASL, each file from a mounted Secret", async () => {
    // TLS is on by default (helm-chart-hardening.int-spec.ts): the files and SASL on top.
    const rendered = await render(
      '--set',
      'temporal.tls.caSecret=temporal-ca',
      '--set',
      'temporal.tls.clientSecret=temporal-client',
      '--set',
      'temporal.tls.serverName=frontend.temporal',
      '--set',
      'kafka.ssl.caSecret=kafka-ca',
      '--set',
      'kafka.sasl.mechanism=scram-sha-512',
    );
    for (const app of APPS.filter((a) => a !== 'console')) {
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
    const cloud = await render('--set', 'temporal.address=acme.a1b2c.tmprl.cloud:7233');
    const { engines } = loadConfig(
      environmentOf(container(deployment(cloud, 'worker')), {
        ...CORE_SECRETS,
        TEMPORAL_API_KEY: SAMPLE_SECRETS.TEMPORAL_API_KEY!,
      }),
    );
    expect(engines.temporal).toMatchObject({ tls: true, apiKey: SAMPLE_SECRETS.TEMPORAL_API_KEY, caFile: undefined });
  });
});
