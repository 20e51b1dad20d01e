import { Controller, Get, Header } from '@nestjs/common';
import { ERROR_DESCRIPTIONS, ERROR_STATUS, type ErrorCode } from '#libs/contracts';

const escape = (s: string): string =>
  s.replace(/[&<>"]/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot' }[c]};`);

function renderErrorDocs(): string {
  const rows = (Object.keys(ERROR_STATUS) as ErrorCode[])
    .map(
      (code) =>
        `<section id="${code}"><h2><a href="#${code}"><code>${code}</code></a> <small>HTTP ${ERROR_STATUS[code]}</small></h2>` +
        `<p>${escape(ERROR_DESCRIPTIONS[code]).replace(/`([^`]+)`/g, '<code>$1</code>')}</p></section>`,
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Errors · Managed agent service</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}h2{font-size:1.1rem;margin-bottom:.2rem}small{color:#666;font-weight:normal}section{border-top:1px solid #ddd;padding:.5rem 0}code{background:#f4f4f4;padding:0 .2rem}</style></head>
<body><h1>Error codes</h1><p>Every error response is <code>{ "error": { "code", "message", "docs" } }</code>; <code>docs</code> links to the entry below.</p>
${rows}</body></html>`;
}

/** The page every `error.docs` link points into. */
@Controller('docs')
export class ErrorDocsController {
  private readonly page = renderErrorDocs();

  @Get('errors')
  @Header('content-type', 'text/html; charset=utf-8')
  errors(): string {
    return this.page;
  }
}
