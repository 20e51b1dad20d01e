import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** An MCP server on loopback (the official SDK's McpServer over Streamable HTTP, stateless). */
export interface TestMcpServer {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  /** The headers of every HTTP request it received. */
  readonly requests: { method: string; headers: IncomingMessage['headers'] }[];
  /** The tool calls it answered, with their arguments. */
  readonly calls: { tool: string; args: Record<string, unknown> }[];
  /** While true, a `tools/call` request has its connection reset (a server that fails after listing). */
  failCalls: boolean;
  close(): Promise<void>;
}

/**
 * Tools: `lookup` ({ city }) answers a fixed forecast naming the city; `big` ({ chars }) answers
 * that many characters; `broken` reports a tool error; `secret` is listed but meant to be left
 * out by an operator's allow-list.
 */
export async function startMcpServer(): Promise<TestMcpServer> {
  const requests: TestMcpServer['requests'] = [];
  const calls: TestMcpServer['calls'] = [];
  const build = (): McpServer => {
    const server = new McpServer({ name: 'test-weather', version: '1.0.0' });
    server.registerTool(
      'lookup',
      { description: 'The weather forecast of a city.', inputSchema: { city: z.string() } },
      ({ city }) => {
        calls.push({ tool: 'lookup', args: { city } });
        return { content: [{ type: 'text', text: `Forecast for ${city}: sunny, 23 degrees (station MCP-7).` }] };
      },
    );
    server.registerTool(
      'big',
      { description: 'A long text.', inputSchema: { chars: z.number().int() } },
      ({ chars }) => {
        calls.push({ tool: 'big', args: { chars } });
        return { content: [{ type: 'text', text: 'big:'.padEnd(chars, 'b') }] };
      },
    );
    server.registerTool('broken', { description: 'Always fails.' }, () => {
      calls.push({ tool: 'broken', args: {} });
      return { isError: true, content: [{ type: 'text', text: 'the backend is down' }] };
    });
    server.registerTool('secret', { description: 'Not for the model.' }, () => {
      calls.push({ tool: 'secret', args: {} });
      return { content: [{ type: 'text', text: 'secret' }] };
    });
    return server;
  };
  const http = createServer((req, res) => {
    requests.push({ method: req.method ?? '', headers: req.headers });
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const body: unknown = raw ? JSON.parse(raw) : undefined;
      if (handle.failCalls && (body as { method?: string } | undefined)?.method === 'tools/call') {
        req.socket.destroy();
        return;
      }
      // Stateless: a server and a transport per request, as the SDK's stateless example does.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      const server = build();
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      server
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body))
        .catch(() => {
          if (!res.headersSent) res.writeHead(500).end();
        });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  const handle: TestMcpServer = {
    url,
    requests,
    calls,
    failCalls: false,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
  return handle;
}
