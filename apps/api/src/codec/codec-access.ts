import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { closeIfBodyUnread } from '../body-limits.js';

export type OperatorRequest = Request & { operator?: true };

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** `/codec/<op>` or `/codec/<token>/<op>` (Express matches routes case-insensitively). */
const CODEC_PATH = /^\/codec\/(?:([^/]+)\/)?[^/]+\/?$/i;

/**
 * Who may call the codec endpoints, and from which browser origin: the operator token
 * (MAS_CODEC_TOKEN) is checked here, as Express middleware before the body parser (app.ts), so a
 * caller without it never has a body read beyond the anonymous limit (body-limits.ts), and is
 * answered 401 at once. CORS answers the Temporal UI's origin only (TEMPORAL_UI_URL).
 */
@Injectable()
export class CodecAccess {
  private readonly token: Buffer | undefined;
  private readonly uiOrigin: string | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.token = config.codecToken === undefined ? undefined : digest(config.codecToken);
    this.uiOrigin = config.temporal.uiUrl && new URL(config.temporal.uiUrl).origin;
  }

  readonly use = (req: OperatorRequest, res: Response, next: NextFunction): void => {
    const match = req.method === 'POST' ? CODEC_PATH.exec(req.path) : null;
    if (!match) return next();
    this.cors(req, res);
    const header = req.headers.authorization ?? '';
    const token =
      match[1] !== undefined
        ? decodeURIComponentOrRaw(match[1])
        : header.startsWith('Bearer ')
          ? header.slice(7).trim()
          : undefined;
    if (!this.token || token === undefined || !timingSafeEqual(digest(token), this.token)) {
      closeIfBodyUnread(req, res);
      res.status(401).json({
        error: {
          code: 'unauthorized',
          message: this.token
            ? 'The codec endpoint needs the operator token (MAS_CODEC_TOKEN).'
            : 'The codec endpoint is off: MAS_CODEC_TOKEN is not set.',
        },
      });
      return;
    }
    req.operator = true;
    next();
  };

  /** Allows the Temporal UI's origin (TEMPORAL_UI_URL); whether it did. */
  cors(req: Request, res: Response): boolean {
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (!origin || origin !== this.uiOrigin) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    return true;
  }
}

function decodeURIComponentOrRaw(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
