import { DataSource } from 'typeorm';
import { AccountsService, McpServersService } from '#libs/accounts';
import { EventStore } from '#libs/events';
import { dataSourceOptions } from '#libs/persistence';
import { testConfig } from '../../../test/support/config.js';
import { runCli, type CliIo } from './cli.js';

const config = testConfig();

async function cli(
  args: string,
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { out: (s) => void (out += s), err: (s) => void (err += s), readStdin: async () => '', env };
  const code = await runCli(args.split(' ').filter(Boolean), config, io);
  return { code, out, err };
}

describe('operator CLI: mcp', () => {
  const name = `cli-mcp-${Math.random().toString(36).slice(2)}`;
  let db: DataSource;

  beforeAll(async () => {
    db = new DataSource({ ...dataSourceOptions(config), logging: ['error'] });
    await db.initialize();
    expect((await cli(`project create --name ${name} --plan pro`)).code).toBe(0);
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('adds a server with an auth header from the environment, stored encrypted and never shown', async () => {
    const added = await cli(
      `mcp add ${name} --url https://mcp.example.com/mcp --header-from-env MCP_TOKEN --tools search,fetch_page --json`,
      { MCP_TOKEN: 'Bearer mcp-secret-123' },
    );
    expect(added.code).toBe(0);
    const server = JSON.parse(added.out);
    expect(server).toMatchObject({
      name: 'mcp-example-com',
      url: 'https://mcp.example.com/mcp',
      header: 'Authorization',
      header_set: true,
      tools: ['search', 'fetch_page'],
    });
    expect(added.out).not.toContain('mcp-secret-123');

    const [row] = (await db.query(`select header_ciphertext from mcp_servers where id = $1`, [server.id])) as {
      header_ciphertext: Buffer;
    }[];
    expect(row!.header_ciphertext.toString('latin1')).not.toContain('mcp-secret-123');
    const accounts = new AccountsService(db, config, new EventStore());
    const project = await accounts.findProject(name);
    const targets = await new McpServersService(db, config, accounts).targets(project.id);
    expect(targets).toEqual([
      {
        name: 'mcp-example-com',
        url: 'https://mcp.example.com/mcp',
        headers: { Authorization: 'Bearer mcp-secret-123' },
        tools: ['search', 'fetch_page'],
      },
    ]);

    const listed = await cli(`mcp list ${name}`);
    expect(listed.code).toBe(0);
    expect(listed.out).toBe(
      `${server.id}  mcp-example-com  https://mcp.example.com/mcp  tools: search,fetch_page  Authorization header set\n`,
    );
  });

  it('adds a named server without a header, allowing every tool, and removes servers by name or id', async () => {
    const added = await cli(`mcp add ${name} --url http://docs.internal:8080/mcp --name docs`);
    expect(added).toMatchObject({ code: 0, out: expect.stringContaining('added MCP server docs') });
    const all = JSON.parse((await cli(`mcp list ${name} --json`)).out) as {
      id: string;
      name: string;
      tools: string[] | null;
      header_set: boolean;
    }[];
    expect(all.map((s) => s.name)).toEqual(['mcp-example-com', 'docs']);
    expect(all[1]).toMatchObject({ tools: null, header_set: false });

    expect(await cli(`mcp remove ${name} docs`)).toMatchObject({
      code: 0,
      out: expect.stringContaining('removed MCP server docs'),
    });
    expect(await cli(`mcp remove ${name} ${all[0]!.id} --json`)).toMatchObject({ code: 0 });
    expect((await cli(`mcp list ${name}`)).out).toBe('no MCP servers\n');
  });

  it('refuses bad input with exit 1 and a clear message, usage errors with exit 2', async () => {
    await cli(`mcp add ${name} --url https://a.example/mcp --name dup`);
    expect(await cli(`mcp add ${name} --url https://b.example/mcp --name dup`)).toMatchObject({
      code: 1,
      err: expect.stringContaining('already has an MCP server named "dup"'),
    });
    expect(await cli(`mcp add ${name} --url ftp://x.example/mcp`)).toMatchObject({
      code: 1,
      err: 'error: MCP server URL must be http or https\n',
    });
    expect(await cli(`mcp add ${name} --url not-a-url`)).toMatchObject({
      code: 1,
      err: expect.stringContaining('is not a URL'),
    });
    expect(await cli(`mcp add ${name} --url https://user:pw@x.example/mcp`)).toMatchObject({
      code: 1,
      err: expect.stringContaining('must not hold credentials'),
    });
    expect(await cli(`mcp add ${name} --url https://x.example/mcp --name Bad_Name`)).toMatchObject({
      code: 1,
      err: expect.stringContaining('is not a valid MCP server name'),
    });
    expect(await cli(`mcp add ${name} --url https://x.example/mcp --name t --tools a.b`)).toMatchObject({
      code: 1,
      err: expect.stringContaining('invalid tool names: a.b'),
    });
    expect(await cli(`mcp add ${name} --url https://x.example/mcp --name t --header-from-env NOPE`)).toMatchObject({
      code: 1,
      err: 'error: environment variable NOPE is not set\n',
    });
    expect(await cli(`mcp remove ${name} nothing`)).toMatchObject({
      code: 1,
      err: expect.stringContaining('has no MCP server "nothing"'),
    });
    expect(await cli(`mcp list no-such-project`)).toMatchObject({
      code: 1,
      err: 'error: no project "no-such-project"\n',
    });
    expect((await cli(`mcp add ${name}`)).code).toBe(2);
    const help = await cli('mcp add --help');
    expect(help).toMatchObject({ code: 0, out: expect.stringContaining('Usage: mas mcp add [options] <project>') });
  });
});
