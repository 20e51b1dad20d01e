import { SseParser, type SseEvent } from './sse.parser.js';

function parseInPieces(stream: string, size: number): SseEvent[] {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  for (let i = 0; i < stream.length; i += size) events.push(...parser.push(stream.slice(i, i + size)));
  events.push(...parser.end());
  return events;
}

describe('SseParser', () => {
  const stream = ': comment\nevent: message_start\ndata: {"a":1}\n\nid: 7\ndata: line one\ndata:line two\n\ndata: [DONE]\n\n';
  const expected = [
    { event: 'message_start', data: '{"a":1}' },
    { event: 'message', data: 'line one\nline two' },
    { event: 'message', data: '[DONE]' },
  ];

  it.each([1, 2, 3, 5, 8, 13, stream.length])('parses the same events whatever the chunk size (%i)', (size) => {
    expect(parseInPieces(stream, size)).toEqual(expected);
  });

  it('accepts \\r\\n and \\r line ends, also when \\r\\n is split across chunks', () => {
    expect(parseInPieces(stream.replace(/\n/g, '\r\n'), 1)).toEqual(expected);
    expect(parseInPieces(stream.replace(/\n/g, '\r'), 4)).toEqual(expected);
  });

  it('delivers a last event that is not followed by a blank line', () => {
    expect(parseInPieces('data: {"x":1}\n\ndata: tail', 4)).toEqual([
      { event: 'message', data: '{"x":1}' },
      { event: 'message', data: 'tail' },
    ]);
  });

  it('ignores events without data and resets the event type after each event', () => {
    expect(parseInPieces('event: ping\n\ndata: x\n\n', 100)).toEqual([{ event: 'message', data: 'x' }]);
  });
});
