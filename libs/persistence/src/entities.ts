import { ApiKeyEntity } from './entities/api-key.entity.js';
import { McpServerEntity } from './entities/mcp-server.entity.js';
import { ModelConfigEntity } from './entities/model-config.entity.js';
import { ProjectEntity } from './entities/project.entity.js';

/** Every TypeORM entity of the service, listed explicitly (ESM has no glob loading). */
export const ENTITIES: readonly Function[] = [ProjectEntity, ApiKeyEntity, ModelConfigEntity, McpServerEntity];
