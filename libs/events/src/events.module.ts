import { Module } from '@nestjs/common';
import { EventStore } from './event-store.js';
import { RequestStream } from './streams/request-stream.js';
import { SessionStream } from './streams/session-stream.js';

/** The one EventStore of an app, and the appenders of the request and session streams over it,
 * injected wherever events are appended. */
@Module({
  providers: [
    { provide: EventStore, useValue: new EventStore() },
    { provide: SessionStream, inject: [EventStore], useFactory: (store: EventStore) => new SessionStream(store) },
    {
      provide: RequestStream,
      inject: [EventStore, SessionStream],
      useFactory: (store: EventStore, sessions: SessionStream) => new RequestStream(store, sessions),
    },
  ],
  exports: [EventStore, SessionStream, RequestStream],
})
export class EventsModule {}
