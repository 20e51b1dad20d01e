import { Controller, HttpCode, Inject, Logger, Options, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { AesGcmPayloadCodec, payloadFromJson, payloadToJson, type JsonPayload } from '#libs/temporal';
import { CodecAccess } from './codec-access.js';

function isJsonPayload(value: unknown): value is JsonPayload {
  if (typeof value !== 'object' || value === null) return false;
  const { metadata, data } = value as Record<string, unknown>;
  const metadataOk =
    metadata == null || (typeof metadata === 'object' && Object.values(metadata).every((v) => typeof v === 'string'));
  return metadataOk && (data == null || typeof data === 'string');
}

/**
 * Temporal's codec-server protocol (`POST {endpoint}/encode|decode`, `{ payloads: [...] }` with
 * base64 fields), so an operator's Temporal UI or CLI shows payloads decrypted. Outside `/v1`:
 * an operator token (MAS_CODEC_TOKEN), not a customer's API key: as `Authorization: Bearer` (the
 * CLI's `--codec-auth`), as the sign-in cookie of /codec/session (the Temporal UI), or, on the
 * local stack only, as the path segment before `encode`/`decode`. The token and CORS are checked
 * by CodecAccess, before the body is read; it also answers /codec/session.
 */
@Controller('codec')
export class CodecController {
  private readonly logger = new Logger('codec');
  private readonly codec: AesGcmPayloadCodec;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly access: CodecAccess,
  ) {
    this.codec = AesGcmPayloadCodec.fromConfig(config);
  }

  @Options([':op', ':token/:op'])
  @HttpCode(204)
  preflight(@Req() req: Request, @Res({ passthrough: true }) res: Response): void {
    if (this.access.cors(req, res)) {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'authorization, content-type, x-namespace');
      res.setHeader('Access-Control-Max-Age', '600');
    }
  }

  @Post([':op', ':token/:op'])
  async handle(@Param('op') op: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    if (op !== 'encode' && op !== 'decode') {
      res.status(404).json({ error: { code: 'not_found', message: 'POST /codec/encode or /codec/decode.' } });
      return;
    }
    const payloads = (req.body as { payloads?: unknown } | undefined)?.payloads;
    if (!Array.isArray(payloads) || !payloads.every(isJsonPayload)) {
      res.status(400).json({
        error: {
          code: 'invalid_body',
          message: 'The body must be { "payloads": [{ "metadata": { name: base64 }, "data": base64 }] }.',
        },
      });
      return;
    }
    try {
      const input = payloads.map(payloadFromJson);
      const output = op === 'encode' ? await this.codec.encode(input) : await this.codec.decode(input);
      res.status(200).json({ payloads: output.map(payloadToJson) });
    } catch (e) {
      // The codec's messages name a key id at most, never a key or a payload.
      const message = e instanceof Error ? e.message : String(e);
      this.logger.warn(`${op} refused: ${message}`);
      res.status(400).json({ error: { code: 'invalid_payload', message } });
    }
  }
}
