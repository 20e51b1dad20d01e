/** One Server-Sent Event as a client parses it. */
export interface SseEvent {
  readonly event: string;
  readonly id: string | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON paths
  readonly data: any;
}

export interface SseResult {
  readonly status: number;
  readonly headers: Headers;
  readonly events: SseEvent[];
  /** Comment lines (keep-alives). */
  readonly comments: string[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body?: any;
}

/** A real SSE client over fetch: reads events until the server ends the stream, or until
 * `stopAfter` events, when it drops the connection as a client whose network failed would. */
export async function readSse(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown },
  stopAfter?: number,
): Promise<SseResult> {
  const controller = new AbortController();
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    signal: controller.signal,
  });
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      events: [],
      comments: [],
      body: text ? JSON.parse(text) : undefined,
    };
  }
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = res.body!.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        let id: string | undefined;
        const data: string[] = [];
        for (const line of frame.split('\n')) {
          if (line.startsWith(':')) comments.push(line.slice(1).trim());
          else if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length) events.push({ event, id, data: JSON.parse(data.join('\n')) });
        if (stopAfter !== undefined && events.length >= stopAfter) {
          controller.abort();
          return { status: res.status, headers: res.headers, events, comments };
        }
      }
    }
  } catch (e) {
    if (!controller.signal.aborted) throw e;
  }
  return { status: res.status, headers: res.headers, events, comments };
}
