import { Module } from '@nestjs/common';
import { StreamHubModule } from '#libs/streaming';
import { SseResponder } from './sse-responder.js';

@Module({ imports: [StreamHubModule], providers: [SseResponder], exports: [SseResponder] })
export class SseModule {}
