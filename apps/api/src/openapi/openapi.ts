import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { ID_SCHEMA, SCHEMAS } from './schemas.js';

/** The interface version (contract section 9). */
export const INTERFACE_VERSION = '1.0.0';

/** The OpenAPI 3.1 document of the /v1 surface, generated from the controllers' decorators. */
export function buildOpenApi(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Managed agent service')
    .setDescription(
      'Runs an AI agent for a customer project on the customer\'s own language-model key. Errors: `{ "error": { "code", "message", "docs" } }`, see /docs/errors.',
    )
    .setVersion(INTERFACE_VERSION)
    .addBearerAuth({
      type: 'http',
      scheme: 'bearer',
      description: 'An API key `sk-mas_...` issued with the operator CLI.',
    })
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    include: [],
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
  });
  // Keep only the contract's surface.
  document.paths = Object.fromEntries(Object.entries(document.paths).filter(([path]) => path.startsWith('/v1/')));
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, ...(SCHEMAS as unknown as Record<string, object>) },
  };
  // Every `{id}` in a path is a request's or a session's or a file's uuid (any other value: 404).
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item) as { parameters?: { in: string; name: string; schema?: object }[] }[]) {
      for (const parameter of operation.parameters ?? [])
        if (parameter.in === 'path' && parameter.name === 'id') parameter.schema = { ...ID_SCHEMA };
    }
  }
  return document;
}

/** Serves the document at /v1/openapi.json and an interactive page at /docs. */
export function serveOpenApi(app: INestApplication): void {
  SwaggerModule.setup('docs', app, () => buildOpenApi(app), {
    jsonDocumentUrl: 'v1/openapi.json',
    yamlDocumentUrl: 'v1/openapi.yaml',
    customSiteTitle: 'Managed agent service API',
  });
}
