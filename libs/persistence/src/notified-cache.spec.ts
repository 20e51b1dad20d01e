import { NotifiedCache } from './notified-cache.js';
import type { ChannelSubscriber, PgListener } from './pg-listener.js';

/** The listener's side as the cache sees it: what it subscribed, told by hand. */
function fakeListener(): { listener: PgListener; heard: () => ChannelSubscriber; vouch: (current: boolean) => void } {
  let subscriber: ChannelSubscriber | undefined;
  let current = true;
  const listener = {
    subscribe: (_: string, s: ChannelSubscriber) => ((subscriber = s), () => (subscriber = undefined)),
    current: () => current,
  } as unknown as PgListener;
  return { listener, heard: () => subscriber!, vouch: (c) => (current = c) };
}

describe('NotifiedCache', () => {
  let now = 0;
  const setup = (maxEntries = 3) => {
    const { listener, heard, vouch } = fakeListener();
    const cache = new NotifiedCache<{ id: string; v: number }>(
      listener,
      { channel: 'mas_test', maxEntries, ttlMs: 1000, tagOf: (x) => x.id },
      () => now,
    );
    let reads = 0;
    const load =
      (id: string, v = 1) =>
      async () => (reads++, { id, v });
    return { cache, heard, vouch, load, reads: () => reads };
  };

  it('keeps nothing until the channel is listened on, and drops everything when it is not', async () => {
    const { cache, heard, load, reads } = setup();
    await cache.get('a', load('a'));
    await cache.get('a', load('a'));
    expect(reads()).toBe(2);
    heard().up();
    await cache.get('a', load('a'));
    await cache.get('a', load('a'));
    expect(reads()).toBe(3);
    heard().down();
    expect(cache.size).toBe(0);
    await cache.get('a', load('a'));
    expect([reads(), cache.size]).toEqual([4, 0]);
  });

  it('answers nothing from memory while the listener cannot vouch for the last second (a silent connection)', async () => {
    const { cache, heard, vouch, load, reads } = setup();
    heard().up();
    await cache.get('k1', load('a'));
    await cache.get('k1', load('a'));
    expect(reads()).toBe(1);
    vouch(false);
    await cache.get('k1', load('a'));
    await cache.get('k1', load('a'));
    expect(reads()).toBe(3);
    vouch(true);
    await cache.get('k1', load('a'));
    expect(reads()).toBe(3);
  });

  it('forgets what a notification names, and does not keep a read that overlapped one', async () => {
    const { cache, heard, load } = setup();
    heard().up();
    await cache.get('k1', load('a', 1));
    heard().notify('a');
    expect(cache.size).toBe(0);
    const overlapping = cache.get('k1', async () => {
      heard().notify('a');
      return { id: 'a', v: 2 };
    });
    expect(await overlapping).toEqual({ id: 'a', v: 2 });
    expect(cache.size).toBe(0);
  });

  it('never keeps a miss, keeps at most maxEntries (least recently used out) and reads again after the TTL', async () => {
    const { cache, heard, load, reads } = setup(2);
    heard().up();
    expect(await cache.get('none', async () => null)).toBeNull();
    expect(cache.size).toBe(0);
    await cache.get('k1', load('a'));
    await cache.get('k2', load('b'));
    await cache.get('k1', load('a')); // k1 used last
    await cache.get('k3', load('c')); // k2 goes
    expect(reads()).toBe(3);
    await cache.get('k1', load('a'));
    expect(reads()).toBe(3);
    await cache.get('k2', load('b'));
    expect(reads()).toBe(4);
    now += 1001;
    await cache.get('k2', load('b'));
    expect(reads()).toBe(5);
  });
});
