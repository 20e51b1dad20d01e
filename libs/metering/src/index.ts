export { addMonths, billingAnchor, currentPeriod } from './billing-period.js';
export { creditsFor, quotaFigures, type QuotaFigures } from './pricing.js';
export { RATE_LIMIT_PER_MINUTE, rateLimitVerdict } from './rate-limit.js';
export { MeteringService, type Admission, type AdmissionRequest, type OpenReservation } from './metering.service.js';
export { MeteringModule } from './metering.module.js';
