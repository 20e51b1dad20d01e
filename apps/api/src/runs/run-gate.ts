/**
 * How many runs this api process has waiting for their first stop at once, and what happens past
 * that: a new run waits its turn (first come, first served) for at most `maxWaitMs`, then is refused
 * before anything starts. Past saturation the service so degrades cleanly: requests wait, or get
 * 503 service_unavailable with Retry-After, never a 502 after the pickup timeout for work that was
 * admitted (issue 16). Pure: no I/O; time comes from the timers the caller's runtime gives.
 */
export class RunGate {
  private running = 0;
  private readonly waiting: { grant: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(
    readonly maxRunning: number,
    readonly maxWaitMs: number,
  ) {}

  /** Runs in flight and runs waiting for a turn. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /** Resolves with a release function once the run may start; rejects with `refusal()` when its
   * turn did not come within `maxWaitMs`. The release is idempotent. */
  enter<E>(refusal: () => E): Promise<() => void> {
    if (this.running < this.maxRunning && this.waiting.length === 0) return Promise.resolve(this.admit());
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          clearTimeout(entry.timer);
          resolve(this.admit());
        },
        timer: setTimeout(() => {
          const at = this.waiting.indexOf(entry);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(refusal());
        }, this.maxWaitMs),
      };
      this.waiting.push(entry);
    });
  }

  private admit(): () => void {
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      if (this.running < this.maxRunning) this.waiting.shift()?.grant();
    };
  }
}
