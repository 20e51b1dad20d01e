import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export type ModelProvider = 'openai' | 'anthropic' | 'scripted';

/** A project's language-model configuration; the key is AES-256-GCM ciphertext, never plaintext. */
@Entity('model_configs')
export class ModelConfigEntity {
  @PrimaryColumn('uuid', { name: 'project_id' }) projectId!: string;
  @Column('text') provider!: ModelProvider;
  @Column('text') model!: string;
  @Column('text', { name: 'base_url', nullable: true }) baseUrl!: string | null;
  @Column('bytea', { name: 'key_ciphertext', nullable: true }) keyCiphertext!: Buffer | null;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt!: Date;
}
