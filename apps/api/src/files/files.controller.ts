import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import { ServiceError, isUuid } from '#libs/contracts';
import { FileStore, FILE_RETENTION_DAYS } from '#libs/persistence';
import { fileDownload } from '#libs/resources';
import { CurrentPrincipal } from '../auth/api-key.guard.js';
import { ApiResponses, errorResponses } from '../openapi/schemas.js';

/** `GET /v1/files/{id}`: downloads a generated file with the same project's key. */
@ApiTags('files')
@ApiBearerAuth()
@Controller('v1/files')
export class FilesController {
  constructor(private readonly files: FileStore) {}

  @Get(':id')
  @ApiOperation({ summary: 'Download a generated file', description: "With the same project's key; kept 7 days." })
  @ApiResponse({ status: 200, description: 'The file, with its media type.' })
  @ApiResponses(errorResponses(['invalid_api_key', 'file_not_found', 'rate_limited', 'service_unavailable']))
  async download(
    @Param('id') id: string,
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
  ): Promise<void> {
    const file = isUuid(id) ? await this.files.get(id, principal.project.id) : undefined;
    if (!file) {
      throw new ServiceError(
        'file_not_found',
        `No file with this id exists in this project, or it is older than ${FILE_RETENTION_DAYS} days.`,
      );
    }
    const { body, headers } = fileDownload(file);
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.status(200).end(body);
  }
}
