import { Logger } from '@nestjs/common';
import { AbstractLogger, type LogLevel, type LogMessage } from 'typeorm';

/** TypeORM's messages through Nest's logger, without query parameters (they may hold customer data). */
export class TypeOrmNestLogger extends AbstractLogger {
  private readonly logger = new Logger('typeorm');

  protected writeLog(level: LogLevel, message: LogMessage | string | number | (LogMessage | string | number)[]): void {
    const messages = this.prepareLogMessages(message, { highlightSql: false, addColonToPrefix: false });
    for (const m of messages) {
      if (m.type === 'query-error' || m.type === 'query-slow') continue; // the failing caller reports its own error
      const text = typeof m.message === 'string' ? m.message : String(m.message);
      if (level === 'error' || m.type === 'error') this.logger.error(text);
      else if (level === 'warn' || m.type === 'warn') this.logger.warn(text);
      else this.logger.log(text);
    }
  }
}
