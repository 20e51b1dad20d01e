import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { ModelProvider, ModelProviderSettings } from '#libs/contracts';

export type { ModelProvider } from '#libs/contracts';

/** A project's language-model configuration; the secret (a key, or AWS credentials) is AES-256-GCM ciphertext, never plaintext. */
@Entity('model_configs')
export class ModelConfigEntity {
  @PrimaryColumn('uuid', { name: 'project_id' }) projectId!: string;
  @Column('text') provider!: ModelProvider;
  @Column('text') model!: string;
  @Column('text', { name: 'base_url', nullable: true }) baseUrl!: string | null;
  /** The provider's own settings (region, resource name, API version); nothing secret. */
  @Column('jsonb', { default: {} }) settings!: ModelProviderSettings;
  @Column('bytea', { name: 'key_ciphertext', nullable: true }) keyCiphertext!: Buffer | null;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt!: Date;
}
