import { createHash, timingSafeEqual } from 'node:crypto';
import { Controller, HttpCode, Inject, Logger, Options, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { AesGcmPayloadCodec, payloadFromJson, payloadToJson, type JsonPayload } from '#libs/temporal';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

function isJsonPayload(value: unknown): value is JsonPayload {
  if (typeof value !== 'object' || value === null) return false;
  const { metadata, data } = value as Record<string, unknown>;
  const metadataOk = metadata == null || (typeof metadata === 'object' && Object.values(metadata).every((v) => typeof v === 'string'));
  return metadataOk && (data == null || typeof data === 'string');
}

/**
 * Temporal's codec-server protocol (`POST {endpoint}/encode|decode`, `{ payloads: [...] }` with
 * base64 fields), so an operator's Temporal UI or CLI shows payloads decrypted. Outside `/v1`:
 * an operator token (MAS_CODEC_TOKEN), not a customer's API key. The token is accepted as
 * `Authorization: Bearer` (the CLI's `--codec-auth`) or as the path segment before
 * `encode`/`decode` (`/codec/<token>`): the UI's codec endpoint setting cannot add a header of
 * its own (it passes only its users' SSO access token). CORS answers the UI's origin only
 * (TEMPORAL_UI_URL).
 */
@Controller('codec')
export class CodecController {
  private readonly logger = new Logger('codec');
  private readonly codec: AesGcmPayloadCodec;
  private readonly token: Buffer | undefined;
  private readonly uiOrigin: string | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.codec = AesGcmPayloadCodec.fromConfig(config);
    this.token = config.codecToken === undefined ? undefined : digest(config.codecToken);
    this.uiOrigin = config.temporal.uiUrl && new URL(config.temporal.uiUrl).origin;
  }

  @Options([':op', ':token/:op'])
  @HttpCode(204)
  preflight(@Req() req: Request, @Res({ passthrough: true }) res: Response): void {
    if (this.cors(req, res)) {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'authorization, content-type, x-namespace');
      res.setHeader('Access-Control-Max-Age', '600');
    }
  }

  @Post(':op')
  async withHeader(@Param('op') op: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const header = req.headers.authorization ?? '';
    await this.handle(op, header.startsWith('Bearer ') ? header.slice(7).trim() : undefined, req, res);
  }

  @Post(':token/:op')
  async withPathToken(@Param('token') token: string, @Param('op') op: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.handle(op, token, req, res);
  }

  private async handle(op: string, token: string | undefined, req: Request, res: Response): Promise<void> {
    this.cors(req, res);
    if (!this.token || token === undefined || !timingSafeEqual(digest(token), this.token)) {
      res.status(401).json({ error: { code: 'unauthorized', message: this.token ? 'The codec endpoint needs the operator token (MAS_CODEC_TOKEN).' : 'The codec endpoint is off: MAS_CODEC_TOKEN is not set.' } });
      return;
    }
    if (op !== 'encode' && op !== 'decode') {
      res.status(404).json({ error: { code: 'not_found', message: 'POST /codec/encode or /codec/decode.' } });
      return;
    }
    const payloads = (req.body as { payloads?: unknown } | undefined)?.payloads;
    if (!Array.isArray(payloads) || !payloads.every(isJsonPayload)) {
      res.status(400).json({ error: { code: 'invalid_body', message: 'The body must be { "payloads": [{ "metadata": { name: base64 }, "data": base64 }] }.' } });
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

  /** Allows the Temporal UI's origin (TEMPORAL_UI_URL); whether it did. */
  private cors(req: Request, res: Response): boolean {
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (!origin || origin !== this.uiOrigin) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    return true;
  }
}
