import { Option, type Command } from 'commander';
import type { ConsoleAccountsService, ConsoleRole } from '#libs/accounts';

/** What the console commands need from the CLI around them. */
export interface ConsoleCommandsContext {
  consoleAccounts(): Promise<ConsoleAccountsService>;
  print(json: boolean, value: unknown, text: string): void;
}

/** `console invite|reset-password`: the customer console's one-time links (docs/console.md). */
export function addConsoleCommands(program: Command, context: ConsoleCommandsContext): void {
  const { print } = context;
  const json = (): Option => new Option('--json', 'print JSON instead of text');
  const consoleCommand = program
    .command('console')
    .description("the customer console's accounts: invitations and password resets as one-time links");
  consoleCommand
    .command('invite')
    .description(
      "invite an email address to a project with a role: prints (or, with SMTP configured, mails) a one-time link that sets a new account's first password, or that an existing account accepts after signing in",
    )
    .argument('<project>', 'project id or name')
    .argument('<email>', 'the email address to invite')
    .addOption(
      new Option(
        '--role <role>',
        'owner (everything), developer (keys, requests, sessions, webhooks, MCP servers), viewer (reads); member is developer',
      )
        .choices(['owner', 'developer', 'viewer', 'member'])
        .default('developer'),
    )
    .addOption(json())
    .action(async (ref: string, email: string, o: { role: ConsoleRole | 'member'; json?: boolean }) => {
      const role: ConsoleRole = o.role === 'member' ? 'developer' : o.role;
      const r = await (await context.consoleAccounts()).invite(ref, email, role);
      print(
        !!o.json,
        { email: r.email, project_id: r.projectId, role, link: r.link, mailed: r.mailed, role_changed: r.roleChanged },
        r.roleChanged
          ? `${r.email} was a member of ${r.projectName}; their role is now ${role}`
          : r.mailed
            ? `${r.email} is invited to ${r.projectName} as ${role}; the one-time link went by mail (valid 7 days)`
            : `${r.email} is invited to ${r.projectName} as ${role}; one-time link (valid 7 days; it sets a new account's password, or an existing account accepts it after signing in):\n${r.link}`,
      );
    });
  consoleCommand
    .command('reset-password')
    .description(
      'print a one-time link that sets a new password (valid 1 hour); using it signs the user out everywhere',
    )
    .argument('<email>', "the user's email address")
    .addOption(json())
    .action(async (email: string, o: { json?: boolean }) => {
      const { link, mailed } = await (await context.consoleAccounts()).passwordResetLink(email);
      print(
        !!o.json,
        { email, link, mailed },
        mailed
          ? 'the one-time link to set a new password went by mail (valid 1 hour)'
          : `one-time link to set a new password (valid 1 hour):\n${link}`,
      );
    });
}
