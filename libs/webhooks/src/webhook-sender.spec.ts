import { HostAllowList } from '#libs/egress';
import { sendWebhook } from './webhook-sender.js';

const headers = { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' };
const noHosts = HostAllowList.parse([]) as HostAllowList;

// The address rules are applied after DNS resolution and before any connection, so these need no
// network: a resolver that answers with a private address is refused, whatever the name.
describe('sendWebhook address rules', () => {
  it('refuses a hostname that resolves to a private, loopback or link-local address', async () => {
    for (const address of ['10.1.2.3', '127.0.0.1', '169.254.169.254', '::1']) {
      const outcome = await sendWebhook(new URL('https://hooks.example.com/in'), '{}', headers, {
        allow: noHosts,
        timeoutMs: 1000,
        resolve: async () => [{ address, family: address.includes(':') ? 6 : 4 }],
      });
      expect(outcome).toMatchObject({
        kind: 'refused',
        reason: expect.stringContaining(`hooks.example.com resolves to ${address}`),
      });
    }
  });

  it('refuses a name with one private answer beside public ones, and reports a name that does not resolve', async () => {
    const mixed = await sendWebhook(new URL('https://hooks.example.com/in'), '{}', headers, {
      allow: noHosts,
      timeoutMs: 1000,
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '192.168.1.5', family: 4 },
      ],
    });
    expect(mixed.kind).toBe('refused');
    const missing = await sendWebhook(new URL('https://nowhere.invalid/'), '{}', headers, {
      allow: noHosts,
      timeoutMs: 1000,
      resolve: async () => Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' })),
    });
    expect(missing).toMatchObject({ kind: 'unreachable', reason: expect.stringContaining('ENOTFOUND') });
  });
});
