import { ArgumentsHost, Catch, HttpException, Logger, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { csrfTokenOf, sessionOf } from './console-request.js';
import { html } from './html.js';
import { page } from './layout.js';
import { RoleRequired, send, SignInRequired } from './respond.js';

/** Errors as pages: a refusal of the services (AccountsError) says what was wrong; anything else is logged, not shown. */
@Catch()
export class ConsoleErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('console');

  catch(error: unknown, host: ArgumentsHost): void {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) return;
    if (error instanceof SignInRequired) {
      // A page asked for while signed out opens again after signing in.
      res.redirect(303, req.method === 'GET' ? `/sign-in?next=${encodeURIComponent(req.originalUrl)}` : '/sign-in');
      return;
    }
    if (error instanceof RoleRequired) {
      send(
        res,
        page(
          { title: 'Not allowed', csrf: csrfTokenOf(req), session: sessionOf(req) },
          html`<p class="notice error" role="alert">${error.message}</p><p><a href="/">Back to your projects</a></p>`,
        ),
        403,
      );
      return;
    }
    let status = 500;
    let message = 'Something went wrong on our side. Try again later.';
    if (error instanceof HttpException) {
      status = error.getStatus();
      message = status === 404 ? 'There is no such page, or it is not yours to see.' : error.message;
    } else if (error instanceof Error && error.name === 'AccountsError') {
      status = 400;
      message = error.message;
    } else {
      this.logger.error(
        `${req.method} ${req.path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    }
    const title = status === 404 ? 'Not found' : status === 400 ? 'Not done' : 'Error';
    send(
      res,
      page(
        { title, csrf: csrfTokenOf(req), session: sessionOf(req) },
        html`<p class="notice error" role="alert">${message}</p><p><a href="/">Back to your projects</a></p>`,
      ),
      status,
    );
  }
}
