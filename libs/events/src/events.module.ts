import { Module } from '@nestjs/common';
import { EventStore } from './event-store.js';

/** The one EventStore of an app, injected wherever events are appended. */
@Module({ providers: [{ provide: EventStore, useValue: new EventStore() }], exports: [EventStore] })
export class EventsModule {}
