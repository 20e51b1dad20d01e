import { Controller, Get, Header } from '@nestjs/common';
import { CONSOLE_CSS, CONSOLE_JS } from './web/assets.js';

@Controller('static')
export class StaticController {
  @Get('console.css')
  @Header('Content-Type', 'text/css; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=300')
  css(): string {
    return CONSOLE_CSS;
  }

  @Get('console.js')
  @Header('Content-Type', 'text/javascript; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=300')
  js(): string {
    return CONSOLE_JS;
  }
}
