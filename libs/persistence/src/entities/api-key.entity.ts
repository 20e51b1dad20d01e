import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** An API key, stored only as an HMAC-SHA-256 under a pepper and a short display prefix. */
@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'project_id' }) projectId!: string;
  @Column('bytea', { name: 'key_hash' }) keyHash!: Buffer;
  /** The first characters of the key, e.g. `sk-mas_Ab3d`, so an operator can tell keys apart. */
  @Column('text') prefix!: string;
  @Column('text', { nullable: true }) label!: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt!: Date;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt!: Date | null;
  /** When the key last authenticated an api request, to the minute (written by `authenticateRequest`). */
  @Column({ type: 'timestamptz', name: 'last_used_at', nullable: true, insert: false, update: false })
  lastUsedAt!: Date | null;
}
