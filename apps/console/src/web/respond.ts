import { HttpException, HttpStatus } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { ConsoleSession } from '#libs/accounts';
import type { Html } from './html.js';
import { sessionOf } from './console-request.js';

/** Sends a page; nothing the console answers is cached (keys and links are shown once). */
export function send(res: Response, body: Html, status = 200): void {
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.type('html').send(body.text);
}

/** Thrown where a page needs a signed-in user; the filter answers with the sign-in page. */
export class SignInRequired extends HttpException {
  constructor() {
    super('Sign in first.', HttpStatus.UNAUTHORIZED);
  }
}

/** Thrown where a member's role does not allow what they asked: 403, saying which role would. */
export class RoleRequired extends HttpException {
  constructor(role: string, needed: string) {
    super(
      `Your role in this project (${role}) does not allow this: it takes ${needed === 'owner' ? 'an owner' : `a ${needed} or an owner`}. An owner can change your role on the Members page.`,
      HttpStatus.FORBIDDEN,
    );
  }
}

/** A path of this console to go to after signing in (`next`), or '/': never another site. */
export function localPath(next: unknown): string {
  return typeof next === 'string' && /^\/(?![/\\])[A-Za-z0-9/_.~%?=&-]*$/.test(next) && next.length <= 500 ? next : '/';
}

export function requireSession(req: Request): ConsoleSession {
  const session = sessionOf(req);
  if (!session) throw new SignInRequired();
  return session;
}

/** A string field of a urlencoded form ('' when absent or repeated). */
export function field(req: Request, name: string): string {
  const v = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : '';
}

/** A query parameter as one string, or undefined. */
export function queryParam(req: Request, name: string): string | undefined {
  const v = req.query[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}
