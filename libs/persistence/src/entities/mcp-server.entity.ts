import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** An MCP server a project's runs may call (DESIGN.md section 9); the auth header's value is AES-256-GCM ciphertext. */
@Entity('mcp_servers')
export class McpServerEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'project_id' }) projectId!: string;
  /** Unique in the project; the model sees its tools as `mcp_<name>_<tool>`. */
  @Column('text') name!: string;
  @Column('text') url!: string;
  @Column('text', { name: 'header_name', nullable: true }) headerName!: string | null;
  @Column('bytea', { name: 'header_ciphertext', nullable: true }) headerCiphertext!: Buffer | null;
  /** The tool names allowed; null: every tool the server lists. */
  @Column('text', { array: true, nullable: true }) tools!: string[] | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt!: Date;
}
