export { dataSourceOptions, runMigrations } from './data-source.js';
export { ApiKeyEntity } from './entities/api-key.entity.js';
export { ModelConfigEntity, type ModelProvider } from './entities/model-config.entity.js';
export { ProjectEntity } from './entities/project.entity.js';
export { PersistenceModule } from './persistence.module.js';
export { PostgresProbe } from './postgres.probe.js';
export { BlobStore, BLOB_RETENTION_HOURS } from './blob-store.js';
export { ConversationStore, ConversationNotFoundError, CONVERSATION_RETENTION_HOURS } from './conversation-store.js';
export { FileStore, FILE_RETENTION_DAYS, type StoredFile } from './file-store.js';
