/** At most `concurrency` worker threads at a time (PDF reading, run_javascript): `await slots()`
 * waits for a free one and returns its release. */
export function threadSlots(concurrency: number): () => Promise<() => void> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async () => {
    if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    return () => {
      running--;
      waiting.shift()?.();
    };
  };
}
