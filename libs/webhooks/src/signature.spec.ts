import { generateWebhookSecret, signWebhook } from './signature.js';

describe('Standard Webhooks signing', () => {
  it("reproduces the specification's published test vector", () => {
    const headers = signWebhook({
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestamp: 1614265330,
      body: '{"test": 2432232314}',
    });
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('signs the timestamp in whole seconds, and a changed body or id changes the signature', () => {
    const base = { secret: generateWebhookSecret(), id: 'a1', timestamp: 1700000000.9, body: '{}' };
    const signed = signWebhook(base);
    expect(signed['webhook-timestamp']).toBe('1700000000');
    expect(signWebhook({ ...base, body: '{ }' })['webhook-signature']).not.toBe(signed['webhook-signature']);
    expect(signWebhook({ ...base, id: 'a2' })['webhook-signature']).not.toBe(signed['webhook-signature']);
  });

  it('generates whsec_ secrets of 32 random bytes and refuses anything else as a key', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(secret);
    expect(() => signWebhook({ secret: 'sk-not-a-webhook-secret', id: 'a', timestamp: 1, body: '' })).toThrow('whsec_');
    expect(() => signWebhook({ secret, id: 'a.b', timestamp: 1, body: '' })).toThrow('"."');
  });
});
