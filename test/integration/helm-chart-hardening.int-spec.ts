// Issue 45, the chart's hardening: every Secret key went to every pod; no read-only root
// filesystem or seccomp profile, so Pod Security `restricted` refused the pods; no NetworkPolicy,
// so pods that fetch customers' URLs reached the engines, the cluster and the metadata addresses;
// TLS to the engines off by default; stream connections shared the request path's api pods.
import { BlockList, isIPv6 } from 'node:net';
import 'reflect-metadata';
import { PATH_METADATA } from '@nestjs/common/constants.js';
import { loadConfig } from '#libs/config';
import { AgentController } from '../../apps/api/src/agent/agent.controller.js';
import {
  component,
  environmentOf,
  pods,
  render,
  SAMPLE_SECRETS,
  type Container,
  type Manifest,
  type PodSpec,
  type SecurityContext,
} from '../support/helm-chart.js';

/** The keys each app may read, from what its code uses (libs/config, the apps' imports): the four
 * loadConfig requires of every app, then each optional key only where it is used. */
const CORE = ['DATABASE_URL', 'MAS_MASTER_KEY', 'MAS_API_KEY_PEPPER', 'MAS_PAYLOAD_KEYS', 'MAS_PAYLOAD_KEY_CURRENT'];
const KAFKA = ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'];
const ALLOWED: Record<string, string[]> = {
  api: [
    ...CORE,
    'MAS_MASTER_KEYS_PREVIOUS',
    'MAS_API_KEY_PEPPERS_PREVIOUS',
    'MAS_CODEC_TOKEN',
    'TEMPORAL_API_KEY',
    ...KAFKA,
  ],
  'api-streams': [
    ...CORE,
    'MAS_MASTER_KEYS_PREVIOUS',
    'MAS_API_KEY_PEPPERS_PREVIOUS',
    'MAS_CODEC_TOKEN',
    'TEMPORAL_API_KEY',
    ...KAFKA,
  ],
  console: [...CORE, 'MAS_MASTER_KEYS_PREVIOUS', 'SMTP_URL'],
  worker: [...CORE, 'MAS_MASTER_KEYS_PREVIOUS', 'TEMPORAL_API_KEY', ...KAFKA],
  'worker-long': [...CORE, 'MAS_MASTER_KEYS_PREVIOUS', 'TEMPORAL_API_KEY', ...KAFKA],
  relay: [...CORE, ...KAFKA],
  projector: [...CORE, ...KAFKA],
  migrate: CORE,
  promote: [...CORE, 'TEMPORAL_API_KEY'],
};
/** Whose Secret each pod reads. */
const SECRET_OF: Record<string, string> = {
  api: 'api',
  'api-streams': 'api',
  console: 'console',
  worker: 'worker',
  'worker-long': 'worker-long',
  relay: 'relay',
  projector: 'projector',
  migrate: 'cli',
  promote: 'cli',
};
const ALL_VALUES = {
  ...SAMPLE_SECRETS,
  MAS_MASTER_KEYS_PREVIOUS: Buffer.alloc(32, 4).toString('base64'),
  SMTP_URL: 'smtps://u:p@mail:465',
};
const setAll = Object.entries(ALL_VALUES).flatMap(([k, v]) => ['--set-string', `secrets.values.${k}=${v}`]);

/**
 * The Pod Security Standards' `restricted` profile (kubernetes.io/docs/concepts/security/
 * pod-security-standards), every control of `baseline` and of `restricted`, as the admission
 * controller checks a pod spec: the problems, [] when admitted.
 */
function restrictedProblems(spec: PodSpec): string[] {
  const problems: string[] = [];
  const pod = spec.securityContext ?? {};
  const containers = [...spec.containers, ...(spec.initContainers ?? [])];
  const each = (what: string, bad: (c: Container, sc: SecurityContext) => boolean) => {
    for (const c of containers) if (bad(c, c.securityContext ?? {})) problems.push(`${c.name}: ${what}`);
  };
  // baseline
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) problems.push('host namespaces');
  each('privileged', (_, sc) => sc.privileged === true);
  const baselineCaps = [
    'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
    'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
  ]; // prettier-ignore
  each('capabilities added beyond baseline', (_, sc) =>
    (sc.capabilities?.add ?? []).some((c) => !baselineCaps.includes(c)),
  );
  for (const v of spec.volumes ?? []) if ('hostPath' in v) problems.push(`hostPath volume ${v.name}`);
  each('hostPort', (c) => (c.ports ?? []).some((p) => (p.hostPort ?? 0) !== 0));
  for (const sc of [pod, ...containers.map((c) => c.securityContext ?? {})]) {
    if (sc.appArmorProfile && !['RuntimeDefault', 'Localhost'].includes(sc.appArmorProfile.type))
      problems.push('AppArmor profile');
    if (
      sc.seLinuxOptions?.type &&
      !['container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'].includes(sc.seLinuxOptions.type)
    )
      problems.push('SELinux type');
    if (sc.seccompProfile?.type === 'Unconfined') problems.push('seccomp Unconfined');
  }
  each('procMount', (_, sc) => sc.procMount !== undefined && sc.procMount !== 'Default');
  const safeSysctls = ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes']; // prettier-ignore
  if ((pod.sysctls ?? []).some((s) => !safeSysctls.includes(s.name))) problems.push('unsafe sysctl');
  // restricted
  const allowedVolumes = [
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ];
  for (const v of spec.volumes ?? [])
    if (!Object.keys(v).some((k) => allowedVolumes.includes(k))) problems.push(`volume type of ${v.name}`);
  each('allowPrivilegeEscalation is not false', (_, sc) => sc.allowPrivilegeEscalation !== false);
  each('runAsNonRoot is not true', (_, sc) => (sc.runAsNonRoot ?? pod.runAsNonRoot) !== true);
  if (pod.runAsUser === 0) problems.push('runAsUser 0');
  each('runAsUser 0', (_, sc) => sc.runAsUser === 0);
  each('seccomp profile is not RuntimeDefault or Localhost', (_, sc) => {
    const type = (sc.seccompProfile ?? pod.seccompProfile)?.type;
    return type !== 'RuntimeDefault' && type !== 'Localhost';
  });
  each('capabilities do not drop ALL', (_, sc) => !(sc.capabilities?.drop ?? []).includes('ALL'));
  each('capabilities added beyond NET_BIND_SERVICE', (_, sc) =>
    (sc.capabilities?.add ?? []).some((c) => c !== 'NET_BIND_SERVICE'),
  );
  return problems;
}

const secretRefs = (c: Container) =>
  c.env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom!.secretKeyRef!);

describe('the Helm chart, hardened (issue 45)', () => {
  let manifests: Manifest[];
  beforeAll(async () => {
    manifests = await render();
  });

  it('gives each pod only the Secret keys its app reads, from a Secret of its own app, and makes those Secrets with only those keys', async () => {
    const all = pods(manifests);
    expect(all.map((p) => p.app).sort()).toEqual(Object.keys(ALLOWED).sort());
    for (const { app, template } of all) {
      const refs = secretRefs(template.spec.containers[0]!);
      expect({ app, keys: refs.map((r) => r.key).sort() }).toEqual({ app, keys: [...ALLOWED[app]!].sort() });
      for (const r of refs) expect(r.name).toBe(`mas-managed-agent-service-${SECRET_OF[app]}-secrets`);
    }
    // The keys loadConfig refuses to start without are the ones every app gets (until libs/config
    // asks for them per app: then this table, and the chart's, lose them where unused).
    for (const { template } of all) expect(() => loadConfig(environmentOf(template.spec.containers[0]!))).not.toThrow();

    const created = await render('--set', 'secrets.create=true', ...setAll);
    const secrets = created.filter((m) => m.kind === 'Secret');
    expect(secrets.map((s) => s.metadata.name).sort()).toEqual(
      [...new Set(Object.values(SECRET_OF))].map((a) => `mas-managed-agent-service-${a}-secrets`).sort(),
    );
    for (const s of secrets) {
      const app = component(s)!;
      const readers = Object.keys(SECRET_OF).filter((a) => SECRET_OF[a] === app);
      const allowed = new Set(readers.flatMap((a) => ALLOWED[a]!));
      expect({ secret: s.metadata.name, keys: Object.keys(s.stringData!).sort() }).toEqual({
        secret: s.metadata.name,
        keys: [...allowed].filter((k) => k in ALL_VALUES).sort(),
      });
    }
    // The ones that matter most: the codec token in the api's only, the relay's and the
    // projector's without Temporal's key or the mail password.
    const keysOf = (app: string) => Object.keys(secrets.find((s) => component(s) === app)!.stringData!);
    for (const app of ['console', 'worker', 'worker-long', 'relay', 'projector', 'cli'])
      expect(keysOf(app)).not.toContain('MAS_CODEC_TOKEN');
    for (const app of ['console', 'relay', 'projector']) expect(keysOf(app)).not.toContain('TEMPORAL_API_KEY');
    for (const app of ['api', 'worker', 'relay', 'projector', 'cli']) expect(keysOf(app)).not.toContain('SMTP_URL');

    // One Secret for all (secrets.existingSecret): each pod still references only its own keys.
    const shared = pods(await render('--set', 'secrets.existingSecret=mas-secrets'));
    for (const { app, template } of shared)
      for (const r of secretRefs(template.spec.containers[0]!)) {
        expect(r.name).toBe('mas-secrets');
        expect(ALLOWED[app]).toContain(r.key);
      }
    await expect(
      render('--set', 'secrets.create=true', '--set', 'secrets.existingSecret=x', ...setAll),
    ).rejects.toThrow(/leave secrets.existingSecret empty/);
  });

  it('runs every pod admissible under Pod Security restricted, on a read-only root filesystem with /tmp an emptyDir, whatever the values try to loosen', async () => {
    const loosened = await render(
      '--set', 'securityContext.allowPrivilegeEscalation=true',
      '--set', 'securityContext.readOnlyRootFilesystem=false',
      '--set', 'podSecurityContext.runAsNonRoot=false',
      '--set', 'workerController.enabled=false',
    ); // prettier-ignore
    const controller = await render('--set', 'workerController.enabled=true');
    for (const rendered of [manifests, loosened, controller]) {
      const all = pods(rendered);
      expect(all.length).toBeGreaterThanOrEqual(8);
      for (const { owner, template } of all) {
        expect({ pod: owner.metadata.name, problems: restrictedProblems(template.spec) }).toEqual({
          pod: owner.metadata.name,
          problems: [],
        });
        const c = template.spec.containers[0]!;
        expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
        const tmp = c.volumeMounts!.find((m) => m.mountPath === '/tmp')!;
        expect(template.spec.volumes!.find((v) => v.name === tmp.name)).toMatchObject({ emptyDir: {} });
      }
    }
    // The checks themselves refuse what restricted refuses.
    const bad: PodSpec = {
      containers: [
        {
          name: 'c',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        } as Container,
      ],
      securityContext: { runAsNonRoot: true },
      volumes: [{ name: 'h', hostPath: { path: '/' } }],
    };
    expect(restrictedProblems(bad)).toEqual([
      'hostPath volume h',
      'volume type of h',
      'c: seccomp profile is not RuntimeDefault or Localhost',
    ]);
  });

  it("denies by default, opens each engine only to the pods that use it, and the internet only to those that fetch customers' URLs, never its metadata addresses or the cluster", async () => {
    const policies = manifests.filter((m) => m.kind === 'NetworkPolicy');
    type Peer = { ipBlock?: { cidr: string; except?: string[] }; namespaceSelector?: object; podSelector?: object };
    type Policy = {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress?: { from?: Peer[]; ports?: { port: string | number }[] }[];
      egress?: { to?: Peer[]; ports?: { port: number; protocol: string }[] }[];
    };
    const spec = (m: Manifest) => m.spec as unknown as Policy;
    const selects = (p: Policy, labels: Record<string, string>) =>
      Object.entries(p.podSelector.matchLabels).every(([k, v]) => labels[k] === v);
    const deny = policies.find((m) => spec(m).ingress === undefined && spec(m).egress === undefined)!;
    expect(spec(deny).policyTypes).toEqual(['Ingress', 'Egress']);
    const all = pods(manifests);
    for (const { app, template } of all) {
      expect({ app, denied: selects(spec(deny), template.metadata.labels) }).toEqual({ app, denied: true });
      expect(policies.filter((m) => m !== deny && selects(spec(m), template.metadata.labels))).toHaveLength(1);
    }
    const policyOf = (app: string) => spec(policies.find((m) => component(m) === app)!);
    const engineNamespaces = (app: string) =>
      (policyOf(app).egress ?? [])
        .flatMap((r) => r.to ?? [])
        .flatMap((p) =>
          Object.values((p.namespaceSelector as { matchLabels?: Record<string, string> })?.matchLabels ?? {}),
        )
        .filter((ns) => ns !== 'kube-system')
        .sort();
    expect(engineNamespaces('console')).toEqual(['postgres']);
    expect(engineNamespaces('relay')).toEqual(['kafka', 'postgres']);
    expect(engineNamespaces('migrate')).toEqual(['postgres']);
    expect(engineNamespaces('promote')).toEqual(['temporal']);
    expect(engineNamespaces('worker')).toEqual(['kafka', 'postgres', 'temporal']);

    const internet = (app: string) =>
      (policyOf(app).egress ?? []).flatMap((r) => r.to ?? []).flatMap((p) => (p.ipBlock ? [p.ipBlock] : []));
    const withInternet = [
      'api',
      'api-streams',
      'console',
      'worker',
      'worker-long',
      'relay',
      'projector',
      'migrate',
      'promote',
    ].filter((a) => internet(a).length > 0);
    expect(withInternet).toEqual(['console', 'worker', 'worker-long']);
    const clusterCidrs = await render(
      '--set-json',
      'networkPolicy.internet.clusterCidrs=["198.18.0.0/16","2001:db8:42::/56"]',
    );
    for (const rendered of [manifests, clusterCidrs])
      for (const app of withInternet) {
        const blocks = (
          rendered.find((m) => m.kind === 'NetworkPolicy' && component(m) === app)!.spec as unknown as Policy
        )
          .egress!.flatMap((r) => r.to ?? [])
          .flatMap((p) => (p.ipBlock ? [p.ipBlock] : []));
        expect(blocks.map((b) => b.cidr).sort()).toEqual(['0.0.0.0/0', '::/0']);
        /** Whether the rule lets `address` through: inside a block and outside its excepts. */
        const allowed = (address: string) => {
          const family = isIPv6(address) ? 'ipv6' : 'ipv4';
          return blocks.some((b) => {
            const inBlock = new BlockList();
            const [net, bits] = b.cidr.split('/');
            if (isIPv6(net!) !== (family === 'ipv6')) return false;
            inBlock.addSubnet(net!, Number(bits), family);
            const except = new BlockList();
            for (const e of b.except ?? []) {
              const [en, eb] = e.split('/');
              expect(isIPv6(en!)).toBe(isIPv6(net!));
              except.addSubnet(en!, Number(eb), family);
            }
            return inBlock.check(address, family) && !except.check(address, family);
          });
        };
        expect(
          ['169.254.169.254', 'fd00:ec2::254', '10.96.0.1', '172.20.0.10', '192.168.1.1', '100.100.100.200'].filter(
            allowed,
          ),
        ).toEqual([]);
        expect(['93.184.216.34', '2606:2800:220:1::1'].every(allowed)).toBe(true);
        if (rendered === clusterCidrs) expect(['198.18.3.4', '2001:db8:42::9'].filter(allowed)).toEqual([]);
      }
    // Only the public ports take connections, and the metrics ports only from the monitoring namespace.
    for (const app of ['api', 'api-streams', 'console'])
      expect(policyOf(app).ingress!.flatMap((r) => r.ports!.map((p) => p.port))).toEqual(['http', 'metrics']);
    for (const app of ['worker', 'worker-long', 'relay', 'projector']) {
      expect(policyOf(app).ingress).toEqual([
        expect.objectContaining({ ports: [{ port: 'metrics', protocol: 'TCP' }] }),
      ]);
      expect(policyOf(app).ingress![0]!.from).toBeDefined();
    }
    expect(policyOf('migrate').ingress).toEqual([]);
  });

  it('connects to Temporal, Kafka and PostgreSQL over TLS unless a value says insecure', async () => {
    const insecure = await render(
      '--set', 'temporal.insecure=true', '--set', 'kafka.insecure=true', '--set', 'postgres.insecure=true',
    ); // prettier-ignore
    for (const [rendered, tls] of [
      [manifests, true],
      [insecure, false],
    ] as const)
      for (const { app, template } of pods(rendered)) {
        const c = template.spec.containers[0]!;
        const { engines } = loadConfig(environmentOf(c));
        expect({ app, temporal: engines.temporal.tls, kafka: engines.kafka.ssl }).toEqual({
          app,
          temporal: tls,
          kafka: tls,
        });
        // node-postgres takes PGSSLMODE when DATABASE_URL names no sslmode.
        expect({ app, pgsslmode: environmentOf(c).PGSSLMODE }).toEqual({
          app,
          pgsslmode: tls ? 'verify-full' : undefined,
        });
      }
    // The former switches are refused, not ignored: tls.enabled=false no longer means plaintext.
    await expect(render('--set', 'temporal.tls.enabled=false')).rejects.toThrow(/temporal.insecure/);
    await expect(render('--set', 'kafka.ssl.enabled=false')).rejects.toThrow(/kafka.insecure/);
  });

  it('puts stream connections on api replicas of their own, and routes GET /v1/agent/{id}/events and text/event-stream requests to them', async () => {
    const streams = manifests.find((m) => m.kind === 'Deployment' && component(m) === 'api-streams')!;
    const api = manifests.find((m) => m.kind === 'Deployment' && component(m) === 'api')!;
    const c = streams.spec.template!.spec.containers[0]!;
    expect(c.command.at(-1)).toBe('dist/apps/api/src/main.js');
    expect(loadConfig(environmentOf(c))).toEqual(loadConfig(environmentOf(api.spec.template!.spec.containers[0]!)));
    const service = manifests.find((m) => m.kind === 'Service' && component(m) === 'api-streams')!;
    expect(service.spec.selector).toEqual(streams.spec.template!.metadata.labels);
    expect(manifests.some((m) => m.kind === 'HorizontalPodAutoscaler' && component(m) === 'api-streams')).toBe(true);

    const routed = await render(
      '--set', 'apiStreams.httpRoute.enabled=true',
      '--set-json', 'apiStreams.httpRoute.parentRefs=[{"name":"public","namespace":"gateways"}]',
    ); // prettier-ignore
    const route = routed.find((m) => m.kind === 'HTTPRoute')!;
    type Rule = {
      matches: { path?: { type: string; value: string }; headers?: { name: string; value: string }[] }[];
      backendRefs: { name: string }[];
    };
    const [toStreams, rest] = (route.spec as { rules: Rule[] }).rules;
    expect(toStreams!.backendRefs).toEqual([expect.objectContaining({ name: service.metadata.name })]);
    expect(rest!.backendRefs).toEqual([expect.objectContaining({ name: 'mas-managed-agent-service-api' })]);
    // The api's own route of the events stream, as Nest serves it.
    const events = `/${Reflect.getMetadata(PATH_METADATA, AgentController) as string}/${
      Reflect.getMetadata(PATH_METADATA, AgentController.prototype.events) as string
    }`.replace(':id', 'req_0123');
    expect(events).toBe('/v1/agent/req_0123/events');
    const path = new RegExp(toStreams!.matches.find((m) => m.path)!.path!.value);
    expect([events, '/v1/agent/req_0123', '/v1/agent', '/v1/sessions/s/messages'].map((p) => path.test(p))).toEqual([
      true,
      false,
      false,
      false,
    ]);
    const accept = toStreams!.matches.find((m) => m.headers)!.headers![0]!;
    expect(accept.name).toBe('Accept');
    expect(new RegExp(accept.value).test('application/json, text/event-stream')).toBe(true);
    expect(new RegExp(accept.value).test('application/json')).toBe(false);
  });
});
