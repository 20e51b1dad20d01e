import type { DataSource } from 'typeorm';

/** Who made a change: a console user (their email) or the operator CLI. */
export interface AuditActor {
  /** `user:<email>` for the console, `operator:<os user>` for the CLI. */
  readonly actor: string;
  /** The client's address (the console) or the host the CLI ran on. */
  readonly address: string | null;
}

export interface AuditEntry {
  readonly id: string;
  readonly at: Date;
  readonly actor: string;
  readonly address: string | null;
  readonly action: string;
  readonly target: string | null;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** How many entries a page of the log shows. */
export const AUDIT_PAGE_SIZE = 50;

/**
 * A project's audit log (DESIGN.md section 11, "console roles"): every change made in the console
 * or with the operator CLI, who made it, when and from where. Owners read it in the console,
 * operators with `mas audit list`. The detail never holds a secret: callers name what changed,
 * not the values of keys or passwords.
 */
export class AuditLog {
  constructor(private readonly db: DataSource) {}

  async record(
    projectId: string,
    by: AuditActor,
    action: string,
    target: string | null = null,
    detail: Record<string, unknown> = {},
  ): Promise<void> {
    await this.db.query(
      `insert into audit_log (project_id, actor, address, action, target, detail) values ($1, $2, $3, $4, $5, $6)`,
      [projectId, by.actor.slice(0, 300), by.address?.slice(0, 100) ?? null, action, target, JSON.stringify(detail)],
    );
  }

  /** The newest entries first; `before` (an entry's id) pages back. */
  async list(projectId: string, options: { before?: string; limit?: number } = {}): Promise<AuditEntry[]> {
    const before = options.before && /^\d{1,18}$/.test(options.before) ? options.before : null;
    const rows = (await this.db.query(
      `select id::text, at, actor, address, action, target, detail from audit_log
        where project_id = $1 and ($2::bigint is null or id < $2::bigint) order by id desc limit $3`,
      [projectId, before, Math.min(options.limit ?? AUDIT_PAGE_SIZE, 500)],
    )) as {
      id: string;
      at: Date;
      actor: string;
      address: string | null;
      action: string;
      target: string | null;
      detail: Record<string, unknown>;
    }[];
    return rows.map((r) => ({ ...r }));
  }
}
