import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { SessionStatus } from '#libs/contracts';

/** A session's read-model row: written by the session workflow's activity, read by the api. */
@Entity('sessions')
export class SessionEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'project_id' }) projectId!: string;
  @Column('text') status!: SessionStatus;
  /** User and assistant messages so far (each counts one). */
  @Column('integer', { name: 'message_count' }) messageCount!: number;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'last_activity_at' }) lastActivityAt!: Date;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt!: Date;
  /** The workflow's write counter: an older write never overwrites a newer one. */
  @Column('integer') revision!: number;
}
