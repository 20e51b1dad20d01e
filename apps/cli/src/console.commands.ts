import { Option, type Command } from 'commander';
import type { ConsoleAccountsService } from '#libs/accounts';

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
      'make an email address a member (or owner) of a project; prints a one-time link to set a password when the address has none yet',
    )
    .argument('<project>', 'project id or name')
    .argument('<email>', 'the email address to invite')
    .addOption(
      new Option('--role <role>', 'owner (may invite and remove members) or member')
        .choices(['owner', 'member'])
        .default('member'),
    )
    .addOption(json())
    .action(async (ref: string, email: string, o: { role: 'owner' | 'member'; json?: boolean }) => {
      const r = await (await context.consoleAccounts()).invite(ref, email, o.role);
      print(
        !!o.json,
        { email: r.email, project_id: r.projectId, role: o.role, link: r.link },
        r.link
          ? `${r.email} is now ${o.role} of ${r.projectName}; one-time link to set a password (valid 7 days):\n${r.link}`
          : `${r.email} is now ${o.role} of ${r.projectName}; they sign in with their password`,
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
      const link = await (await context.consoleAccounts()).passwordResetLink(email);
      print(!!o.json, { email, link }, `one-time link to set a new password (valid 1 hour):\n${link}`);
    });
}
