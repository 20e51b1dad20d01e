/** Retries `check` until it resolves (an assertion that passes, or a value found), or rethrows
 * its last failure once `timeoutMs` have gone: for read models and projections that catch up on
 * their own time. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
