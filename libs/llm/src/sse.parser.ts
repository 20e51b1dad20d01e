/** One server-sent event: its `event:` type (`message` when absent) and its joined `data:` lines. */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

/**
 * An incremental parser for `text/event-stream` (WHATWG rules: `\n`, `\r\n` or `\r` line ends,
 * `data:` lines joined with `\n`, comments and `id:`/`retry:` ignored). Pure, so it is tested on
 * captured streams cut at arbitrary points.
 */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private type = '';

  /** Feeds decoded text; returns the events completed by it. */
  push(text: string): SseEvent[] {
    this.buffer += text;
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (c !== '\n' && c !== '\r') continue;
      // A final `\r` may be the first half of `\r\n` split across chunks: wait for the next one.
      if (c === '\r' && i + 1 === this.buffer.length) break;
      const line = this.buffer.slice(start, i);
      if (c === '\r' && this.buffer[i + 1] === '\n') i++;
      start = i + 1;
      this.line(line, events);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** Ends the stream; an event not followed by a blank line is still delivered (lenient servers). */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    const rest = this.buffer.replace(/\r$/, '');
    this.buffer = '';
    if (rest !== '') this.line(rest, events);
    this.line('', events);
    return events;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) events.push({ event: this.type || 'message', data: this.data.join('\n') });
      this.data = [];
      this.type = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.type = value;
  }
}
